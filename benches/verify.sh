#!/usr/bin/env bash
# How much of the corpus `--verify` checks: for every module of ../shared/corpus, exact and
# `--similar`, in every `--mode`, from `--verify`'s summary line: the issue's two figures, the
# runs that ran to the end and the functions fully checked (of all functions, the literal
# figure); beside them the functions unchanged with all they call (not run: the same body on
# both sides, calling no address, and all it calls or takes the address of unchanged with all
# they call, so that its runs would be the same on both sides; a function whose body the merge
# left alone but that calls a changed one is run, and is not among them), the functions fully
# checked *or* unchanged with all they call (of all functions; the library's figure,
# `VerifyReport::fully_checked_or_unchanged`, read from the summary), the functions fully
# checked of those the merge changed (all but the unchanged ones), and the runs that ended only
# on another fill of memory; and the time against the same merge without
# `--verify`: CPU seconds (`perf stat -e task-clock`, the mean of three runs) where perf works,
# else wall seconds of one run.
#
# Then the mutation check over the corpus (`corpus_mutations_are_reported` in
# tests/differential.rs, a release test build): per module, exact and `--similar`, one live
# instruction of up to CORPUS_MUTANTS (40) kept or shared bodies corrupted so that a value
# changes on the check's inputs, and how many `--verify` reports (of those whose original ran to
# the end, and of those 256 more argument tuples tell apart). VERIFY_MUTATIONS=0 leaves it out.
#
#     bash benches/verify.sh                 # after `cargo build --release`
#     VERIFY_MODULES=dprint_markdown VERIFY_MODES=safe bash benches/verify.sh
#     VERIFY_ARGS=--verify-unchanged VERIFY_MUTATIONS=0 bash benches/verify.sh   # run them all
#
# Needs ../shared/corpus (skipped with a note when absent) and python3. Writes nothing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="${CLIF_MERGE:-$root/target/release/clif-merge}"
corpus="$root/../shared/corpus"
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -d "$corpus" ] || { echo "note: $corpus is absent: nothing to measure"; exit 0; }
modes=${VERIFY_MODES:-safe aliases thunks}
extra=${VERIFY_ARGS:-}

# Seconds of a command (CPU, else wall time), its standard error kept in $err.
err=$(mktemp)
perf_out=$(mktemp)
trap 'rm -f "$err" "$perf_out"' EXIT
seconds() {
    local start end
    : >"$perf_out"
    if command -v perf >/dev/null \
        && { perf stat -x, -o "$perf_out" -e task-clock -r 3 "$@" >/dev/null 2>"$err" || true; } \
        && grep -q task-clock "$perf_out"; then
        awk -F, '/task-clock/ { printf "%.2f\n", $1 / 1000 }' "$perf_out"
        return
    fi
    start=$(date +%s.%N)
    "$@" >/dev/null 2>"$err" || true
    end=$(date +%s.%N)
    python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$start" "$end"
}

echo "| module | merge | mode | runs | to the end | functions | fully checked | unchanged with all they call (not run) | fully checked or unchanged with all they call | fully checked of changed | ended on another fill | mismatches | unsupported (top opcodes) | merge s | --verify s | ratio |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
for file in "$corpus"/*.clif "$corpus"/*.clif.xz; do
    [ -e "$file" ] || continue
    name=$(basename "$file"); name=${name%.xz}; name=${name%.clif}
    if [ -n "${VERIFY_MODULES:-}" ] && ! [[ " $VERIFY_MODULES " == *" $name "* ]]; then
        continue
    fi
    for similar in "" "--similar"; do
        for mode in $modes; do
            base=$(seconds "$bin" "$file" --mode "$mode" $similar --report json)
            verify=$(seconds "$bin" "$file" --mode "$mode" $similar --report json --verify $extra)
            python3 - "$err" "$name" "${similar:-exact}" "$mode" "$base" "$verify" <<'PY'
import re, sys
err, name, merge, mode, base, verify = sys.argv[1:]
text = open(err).read()
m = re.search(r"verify: (\d+) functions, (\d+) runs, (\d+) mismatches \((\d+) inconclusive, "
              r"(\d+) unsupported, (\d+) skipped\); (\d+) fully checked", text)
if not m:
    print(f"| {name} | {merge} | {mode} | no summary: {text.strip()[:200]} |")
    sys.exit(0)
funcs, runs, mism, inc, uns, skipped, full = map(int, m.groups())
done = runs - inc - uns
total = funcs + skipped
pct = lambda a, b: f"{100 * a / b:.1f} %" if b else "—"
same = re.search(r"(\d+) unchanged", text)
same = int(same.group(1)) if same else 0
# The library's shares of all functions (fully checked; fully checked or unchanged with all
# they call), as the summary prints them.
shares = re.search(r"of (\d+) functions: (\d+) \(([\d.]+) %\) fully checked, (\d+) \(([\d.]+) %\) "
                   r"fully checked or unchanged with all they call", text)
vouched = f"{shares.group(4)} ({shares.group(5)} %)" if shares else "—"
other = re.search(r"(\d+) runs ended on another fill", text)
other = int(other.group(1)) if other else 0
top = re.search(r"unsupported: (.*)", text)
top = top.group(1).strip() if top else ""
ratio = float(verify) / float(base) if float(base) > 0 else 0
print(f"| {name} | {merge} | {mode} | {runs} | {done} ({pct(done, runs)}) | {total} | "
      f"{full} ({pct(full, total)}) | {same} ({pct(same, total)}) | "
      f"{vouched} | "
      f"{full} / {total - same} ({pct(full, total - same)}) | {other} | {mism} | {top[:80]} | "
      f"{base} | {verify} | {ratio:.1f}× |")
PY
        done
    done
done

[ "${VERIFY_MUTATIONS:-1}" = 0 ] && exit 0
echo
echo "| module | merge | reported (original ran to the end) | reported (some tuple tells apart) | missed by kind | left out as equivalent, by proof | proofs refuted by runs |"
echo "|---|---|---:|---:|---|---|---:|"
cd "$root"
VERIFY_MODULES="${VERIFY_MODULES:-}" cargo test --release --quiet --test differential \
    -- --ignored --exact corpus_mutations_are_reported --nocapture 2>/dev/null | grep '^|' || true
