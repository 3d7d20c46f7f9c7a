#!/usr/bin/env bash
# Whole runs against LLVM 14's `opt`: `clif-merge M.clif --report json` against
# `opt -passes=mergefunc -disable-output M.ll` on the same genmod module, wall time of each
# whole process (reading included), and our peak memory against the input's size.
#
#     cargo build --release && bash benches/wholerun.sh
#     FUNCTIONS=10000 RUNS=5 bash benches/wholerun.sh
#     BUSY=1 bash benches/wholerun.sh      # with one core taken by `yes > /dev/null`
#
# Needs ../shared/tools/genmod.py (python3), `opt` (Debian package `llvm`; $OPT to choose
# another) and GNU time (Debian package `time`, /usr/bin/time). The module is
# `genmod.py --functions N --dup-rate 0.1 --seed 1`, kept in target/bench-data/ between runs.
# Runs alternate (ours, opt, ours, opt, ...); printed: each run, the medians, the median of the
# per-run ratios (our run against the opt run right after it) of wall time and of CPU time
# (user + system: steadier than wall time on a shared machine), and our peak RSS against the
# size of the .clif file. $CLIF_MERGE: the binary to time (default target/release/clif-merge).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
functions=${FUNCTIONS:-100000}
runs=${RUNS:-3}
ours=${CLIF_MERGE:-$root/target/release/clif-merge}
genmod=$root/../shared/tools/genmod.py
opt=${OPT:-$(command -v opt-14 || command -v opt || true)}

if [ ! -f "$genmod" ]; then
    echo "note: $genmod not found: whole-run bench skipped" >&2
    exit 0
fi
for tool in "$ours" "$opt" /usr/bin/time; do
    if [ -z "$tool" ] || [ ! -x "$tool" ]; then
        echo "error: ${tool:-opt} not found (clif-merge: cargo build --release; opt: Debian package llvm; /usr/bin/time: Debian package time)" >&2
        exit 1
    fi
done

data=$root/target/bench-data
mkdir -p "$data"
base=$data/whole-$functions
if [ ! -f "$base.clif" ] || [ ! -f "$base.ll" ]; then
    echo "generating $functions functions" >&2
    python3 "$genmod" --functions "$functions" --dup-rate 0.1 --seed 1 \
        --out-ll "$base.ll.tmp" --out-clif "$base.clif.tmp" --out-expect "$base.expect.json" >/dev/null
    mv "$base.ll.tmp" "$base.ll"
    mv "$base.clif.tmp" "$base.clif"
fi
input_bytes=$(stat -c %s "$base.clif")

busy_pid=
cleanup() {
    if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
if [ "${BUSY:-0}" = 1 ]; then
    yes >/dev/null &
    busy_pid=$!
    echo "one core busy: yes > /dev/null (pid $busy_pid)" >&2
fi

# Prints "WALL USER SYS MAXRSS_KB" of one run of the command.
timed() {
    local out
    out=$(mktemp)
    /usr/bin/time -f "%e %U %S %M" -o "$out" "$@" >/dev/null 2>&1
    cat "$out"
    rm -f "$out"
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ours_wall=() opt_wall=() ratios=() peaks=() ours_cpu=() opt_cpu=() cpu_ratios=()
for i in $(seq 1 "$runs"); do
    read -r ow ou os om < <(timed "$ours" "$base.clif" --report json)
    read -r lw lu ls lm < <(timed "$opt" -passes=mergefunc -disable-output "$base.ll")
    ratio=$(awk -v a="$ow" -v b="$lw" 'BEGIN { printf "%.3f", a / b }')
    echo "run $i: ours $ow s (cpu $(awk -v u="$ou" -v s="$os" 'BEGIN { print u + s }') s, peak $((om / 1024)) MiB), opt $lw s (cpu $(awk -v u="$lu" -v s="$ls" 'BEGIN { print u + s }') s, peak $((lm / 1024)) MiB), ours/opt $ratio" >&2
    ours_wall+=("$ow")
    opt_wall+=("$lw")
    ratios+=("$ratio")
    peaks+=("$om")
    ours_cpu+=("$(awk -v u="$ou" -v s="$os" 'BEGIN { print u + s }')")
    opt_cpu+=("$(awk -v u="$lu" -v s="$ls" 'BEGIN { print u + s }')")
    cpu_ratios+=("$(awk -v a="$ou" -v b="$os" -v c="$lu" -v d="$ls" 'BEGIN { printf "%.3f", (a + b) / (c + d) }')")
done

ow=$(printf '%s\n' "${ours_wall[@]}" | median)
lw=$(printf '%s\n' "${opt_wall[@]}" | median)
oc=$(printf '%s\n' "${ours_cpu[@]}" | median)
lc=$(printf '%s\n' "${opt_cpu[@]}" | median)
cpu_ratio=$(printf '%s\n' "${cpu_ratios[@]}" | median)
ratio=$(printf '%s\n' "${ratios[@]}" | median)
peak_kb=$(printf '%s\n' "${peaks[@]}" | median)
echo
echo "| functions | input MB | runs | ours s (wall) | opt s (wall) | ours/opt wall (median of per-run ratios) | ours s (cpu) | opt s (cpu) | ours/opt cpu | our peak RSS MB | peak / input |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -v n="$functions" -v in_b="$input_bytes" -v r="$runs" -v ow="$ow" -v oc="$oc" -v lw="$lw" -v lc="$lc" -v ratio="$ratio" -v cr="$cpu_ratio" -v pk="$peak_kb" 'BEGIN {
    printf "| %d | %.1f | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f |\n", n, in_b / 1e6, r, ow, lw, ratio, oc, lc, cr, pk * 1024 / 1e6, pk * 1024 / in_b
}'
echo
busy_note=""; [ -n "$busy_pid" ] && busy_note=" One core was busy with yes > /dev/null."
echo "Whole processes, medians; ours: clif-merge FILE.clif --report json (read, verify, merge, report); opt: opt -passes=mergefunc -disable-output FILE.ll. Peak: /usr/bin/time's maximum resident set size.$busy_note"
