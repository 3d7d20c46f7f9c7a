//! `--verify`'s edge tuples: the first six runs of a function give each parameter the edge
//! values 0, 1, -1, MIN, MAX and 2 (NaN for floats), parameter `k` of run `r` the value
//! `(r + k) mod 6` (`arguments` in `src/verify/inputs.rs`). Were they the same for every
//! parameter, two parameters of one type would be equal in each of them.

#[path = "common/planted.rs"]
mod planted;

use clif_merge::Mode;
use clif_merge::verify::{VerifyOptions, verify_merge};
use planted::{merged, read};

/// `%f` returns its first parameter, `%g` its second: a "merge" that gives `%g` `%f`'s body is
/// wrong on any tuple whose two parameters differ. On the edge tuples alone (six runs), uniform
/// edge tuples never made them differ and passed it; staggered ones report it.
#[test]
fn the_edge_tuples_alone_tell_two_parameters_of_one_type_apart() {
    let module = |g_returns: &str| {
        format!(
            "function %f(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n    return v0\n}}\n\n\
             function %g(i64, i64) -> i64 {{\nblock0(v0: i64, v1: i64):\n    return {g_returns}\n}}\n"
        )
    };
    let original = read(&module("v1"));
    let report = merged(&original, Mode::Aliases).0;
    assert_eq!(report.merged, 0, "the two bodies differ");
    let edges_only = VerifyOptions {
        runs: 6,
        ..VerifyOptions::default()
    };
    let checked = verify_merge(&original, &read(&module("v0")), &report, &edges_only);
    assert!(!checked.is_ok(), "{}", checked.summary());
}
