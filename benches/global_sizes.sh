#!/usr/bin/env bash
# Global merging's figures, as the tables of benches/README.md show them.
#
#     cargo build --release --example split_units && cargo build --release
#     bash benches/global_sizes.sh [N]          # N units (default 8)
#
# Every module of ../shared/corpus is split into N units (`examples/split_units.rs`: function
# i goes to unit i mod N, calls across units become imports). Linked x86_64 `.text` bytes
# (`ld.lld -shared -z undefs`, no ICF), `--mode aliases`:
#   alone   each unit merged alone
#   global  summarize, combine, each unit merged with `--summary`
#   whole   the module merged as one unit
# and the same three with `--similar`. Then the time of round 2 against merging each unit alone,
# and of summarizing against the pass time of the unit (`--time-passes` of both), summed over the units,
# median of 5 alternating runs. Writes only under target/global-sizes/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/clif-merge"
split="$root/target/release/examples/split_units"
shared="$root/../shared"
work="$root/target/global-sizes"
units=${1:-8}
mkdir -p "$work"
[ -x "$bin" ] && [ -x "$split" ] || {
    echo "build first: cargo build --release --example split_units && cargo build --release" >&2
    exit 1
}
command -v ld.lld >/dev/null || { echo "needs ld.lld (Debian: lld)" >&2; exit 1; }

text_of() { # objects... -> linked .text bytes
    ld.lld -shared -z undefs "$@" -o "$work/linked.so"
    python3 -c "
import sys, subprocess
out = subprocess.run(['size', '-A', sys.argv[1]], capture_output=True, text=True).stdout
print(next(int(l.split()[1]) for l in out.splitlines() if l.startswith('.text ')))" "$work/linked.so"
}
pct() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{100*(b-a)/a:+.2f} %')" "$1" "$2"; }
now() { date +%s%N; }

echo "## Linked x86_64 .text, $units units, --mode aliases (vs whole module)"
echo
echo "| module | flags | alone | global | whole | alone vs whole | global vs whole |"
echo "|---|---|---:|---:|---:|---:|---:|"
for file in "$shared"/corpus/*.clif "$shared"/corpus/*.clif.xz; do
    [ -e "$file" ] || continue
    name=$(basename "$file"); name=${name%.xz}; name=${name%.clif}
    dir="$work/$name"; rm -rf "$dir"; mkdir -p "$dir"
    "$split" "$file" "$units" "$dir"
    for k in $(seq 0 $((units - 1))); do "$bin" summarize "$dir/unit$k.clif" -o "$dir/unit$k.summary"; done
    "$bin" combine "$dir"/unit*.summary -o "$dir/all.summary"
    for flags in "" "--similar"; do
        for k in $(seq 0 $((units - 1))); do
            "$bin" "$dir/unit$k.clif" --mode aliases $flags -o "$dir/alone$k.o" >/dev/null
            "$bin" "$dir/unit$k.clif" --mode aliases $flags --summary "$dir/all.summary" \
                -o "$dir/global$k.o" >/dev/null
        done
        "$bin" "$file" --mode aliases $flags -o "$dir/whole.o" >/dev/null
        alone=$(text_of "$dir"/alone?.o); global=$(text_of "$dir"/global?.o); whole=$(text_of "$dir/whole.o")
        echo "| $name | ${flags:-exact} | $alone | $global | $whole | $(pct "$whole" "$alone") | $(pct "$whole" "$global") |"
    done
done

echo
echo "## Time, summed over the units (median of 5 alternating runs)"
echo
echo "| module | round 2 / alone (wall) | summarize / unit pass time |"
echo "|---|---:|---:|"
for dir in "$work"/*/; do
    [ -e "$dir/all.summary" ] || continue
    name=$(basename "$dir")
    ratios=(); sratios=()
    for run in 1 2 3 4 5; do
        t0=$(now)
        for k in $(seq 0 $((units - 1))); do "$bin" "$dir/unit$k.clif" --mode aliases -o "$dir/t.o" >/dev/null; done
        t1=$(now)
        for k in $(seq 0 $((units - 1))); do "$bin" "$dir/unit$k.clif" --mode aliases --summary "$dir/all.summary" -o "$dir/t.o" >/dev/null; done
        t2=$(now)
        pass=0
        for k in $(seq 0 $((units - 1))); do
            p=$("$bin" "$dir/unit$k.clif" --time-passes --report json 2>&1 >/dev/null | sed -n 's/^pass-time-ms: //p')
            pass=$(python3 -c "print($pass + $p)")
        done
        summarize=0
        for k in $(seq 0 $((units - 1))); do
            s=$("$bin" summarize "$dir/unit$k.clif" -o "$dir/t.summary" --time-passes 2>&1 | sed -n 's/^summarize-ms: //p')
            summarize=$(python3 -c "print($summarize + $s)")
        done
        ratios+=("$(python3 -c "print(f'{($t2 - $t1) / ($t1 - $t0):.3f}')")")
        sratios+=("$(python3 -c "print(f'{$summarize / $pass:.3f}')")")
    done
    median() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
    echo "| $name | $(median "${ratios[@]}") | $(median "${sratios[@]}") |"
done
