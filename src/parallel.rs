//! Running independent per-function work on the machine's cores, with rayon. Every result
//! depends only on its own item, so the output is the same whatever the number of threads.
//!
//! Small modules run on the calling thread without rayon: see [`PARALLEL_MIN_ITEMS`].

use rayon::prelude::*;

/// Below this many items, one thread is quicker. The cost of more is not starting a thread (tens
/// of microseconds) but waiting for it to end: on a virtual machine whose other core is idle,
/// that can take a millisecond, as long as the whole work for a thousand functions. Measured
/// with `cargo bench --bench pass` (1,000 functions: 2.7 to 4.3 µs per function on one thread,
/// 3.5 to 4.6 on two).
const PARALLEL_MIN_ITEMS: usize = 4096;

/// `f` applied to every item, in order; each thread has its own scratch state from `init`.
pub fn map<T: Sync, R: Send, S>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &T) -> R + Sync,
) -> Vec<R> {
    if items.len() < PARALLEL_MIN_ITEMS {
        let mut state = init();
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| f(&mut state, i, item))
            .collect();
    }
    // `map_init` makes a state for each piece of work rayon splits off, not for each item.
    items
        .par_iter()
        .enumerate()
        .map_init(&init, |state, (i, item)| f(state, i, item))
        .collect()
}

/// `f` applied to every item in place.
pub fn for_each_mut<T: Send>(items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
    if items.len() < PARALLEL_MIN_ITEMS {
        items
            .iter_mut()
            .enumerate()
            .for_each(|(i, item)| f(i, item));
        return;
    }
    items
        .par_iter_mut()
        .enumerate()
        .for_each(|(i, item)| f(i, item));
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_keeps_the_order_of_items() {
        let items: Vec<usize> = (0..10_000).collect();
        let out = map(
            &items,
            || 0usize,
            |calls, i, &x| {
                *calls += 1;
                assert_eq!(i, x);
                x * 2
            },
        );
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn for_each_mut_visits_every_item_once_with_its_index() {
        let mut items = vec![0usize; 10_000];
        for_each_mut(&mut items, |i, x| *x += i + 1);
        assert!(items.iter().enumerate().all(|(i, &x)| x == i + 1));
    }
}
