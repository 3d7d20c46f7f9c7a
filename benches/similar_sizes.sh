#!/usr/bin/env bash
# Sizes with similar merging, as the tables of benches/README.md show them.
#
#     cargo build --release && cargo build --release --example similar_predict
#     bash benches/similar_sizes.sh
#
# (a) Every module of ../shared/corpus: x86_64 `.text` bytes of the object, `--mode aliases`:
#     unmerged (`text_bytes_unmerged` of `--size-baseline`), exact merging, and `--similar` (plus
#     the read-only records it writes, `record_bytes`), with
#     the reductions, next to what Binaryen's DFE + MergeSimilarFunctions removes from the same
#     programs' wasm code section (the figures the similar-merging issue quotes).
# (b) The cost model against the compiled code, per corpus module (`examples/similar_predict.rs`):
#     x86_64 `.text` merged exactly, with `--similar` judged by the model alone (what runs
#     without `-o`) and judged by compiled sizes (what runs with `-o`), and the saving the model
#     predicted for its groups next to the saving measured (exact − model).
# (c) genmod modules with near-duplicates (`--dup-rate 0 --near-rate 0.3`): LLVM 22
#     (`llc-22 -O2 -filetype=obj -function-sections -relocation-model=pic`, then
#     `ld.lld -shared -z undefs`): plain, `--icf=all`, and `-enable-global-merge-func` with
#     `--icf=all`, linked `.text` bytes (`llvm-size -A`); ours: `clif-merge X.clif -o X.o
#     --function-sections`, the object's `.text` unmerged (`--size-baseline`), exact and
#     `--similar`, and the `--similar` object linked the same way. Reductions relative to each
#     tool's own unmerged build.
#
# Needs python3, ld.lld and llc-22 / llvm-size (Debian: lld, llvm-22); what is missing is
# skipped with a note. Writes only under target/similar-sizes/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/clif-merge"
shared="$root/../shared"
work="$root/target/similar-sizes"
mkdir -p "$work"
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
pct() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{100*(a-b)/a:.2f} %')" "$1" "$2"; }
have() { command -v "$1" >/dev/null 2>&1; }

echo "## (a) Corpus: x86_64 .text of the object, --mode aliases"
echo
echo "| module | unmerged | exact | --similar | exact saves | --similar saves | Binaryen (wasm code) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
declare -A binaryen=([sqljs]="0.14 %" [resvg]="2.22 %" [dprint_markdown]="7.39 %" [tiktoken_lite]="1.58 %")
for file in "$shared"/corpus/*.clif "$shared"/corpus/*.clif.xz; do
    [ -e "$file" ] || continue
    name=$(basename "$file"); name=${name%.xz}; name=${name%.clif}
    "$bin" "$file" --mode aliases -o "$work/$name.o" --size-baseline --report json >"$work/$name.exact.json"
    "$bin" "$file" --mode aliases --similar -o "$work/$name.o" --report json >"$work/$name.similar.json"
    unmerged=$(json "$work/$name.exact.json" "d['object']['text_bytes_unmerged']")
    exact=$(json "$work/$name.exact.json" "d['object']['text_bytes']")
    # Read-only records of constants are bytes the merge adds outside .text: counted here.
    similar=$(json "$work/$name.similar.json" "d['object']['text_bytes'] + d['object'].get('record_bytes', 0)")
    echo "| $name | $unmerged | $exact | $similar | $(pct "$unmerged" "$exact") | $(pct "$unmerged" "$similar") | ${binaryen[$name]:-—} |"
done

echo
echo "## (b) Corpus: the cost model's predicted saving against the measured one (x86_64, --mode aliases)"
echo
predict="$root/target/release/examples/similar_predict"
if [ -x "$predict" ]; then
    echo "| module | exact | --similar, model | --similar, measured (-o) | predicted | measured | predicted / measured |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    "$predict" "$shared"/corpus/*.clif "$shared"/corpus/*.clif.xz | tail -n +2 |
        while IFS=$'\t' read -r name exact model judged predicted measured ratio; do
            echo "| $name | $exact | $model | $judged | $predicted | $measured | $ratio |"
        done
else
    echo "build first: cargo build --release --example similar_predict (skipped)"
fi

echo
echo "## (c) genmod with near-duplicates: linked .text (ld.lld -shared -z undefs)"
echo
if ! have ld.lld || ! have llvm-size-22 && ! have llvm-size; then
    echo "ld.lld or llvm-size missing (Debian: lld, llvm-22): skipped"
    exit 0
fi
size_tool=$(have llvm-size-22 && echo llvm-size-22 || echo llvm-size)
text_of() { "$size_tool" -A "$1" | awk '$1 == ".text" { print $2 }'; }
link() { ld.lld -shared -z undefs "$@"; }
echo "| module | LLVM plain | LLVM ICF | LLVM GMF+ICF | GMF+ICF saves | ours unmerged | ours exact | ours --similar | --similar saves | ours --similar linked |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for spec in "2000 3" "2000 5" "5000 7"; do
    set -- $spec
    n=$1 seed=$2 base="$work/near-$n-s$seed"
    python3 "$shared/tools/genmod.py" --functions "$n" --dup-rate 0 --near-rate 0.3 --seed "$seed" \
        --out-ll "$base.ll" --out-clif "$base.clif" >/dev/null 2>&1
    llvm_plain=— llvm_icf=— llvm_gmf=— gmf_saves=—
    if have llc-22; then
        llc-22 -O2 -filetype=obj -function-sections -relocation-model=pic "$base.ll" -o "$base.llvm.o"
        llc-22 -O2 -filetype=obj -function-sections -relocation-model=pic -enable-global-merge-func \
            "$base.ll" -o "$base.gmf.o"
        link "$base.llvm.o" -o "$base.llvm.so"; llvm_plain=$(text_of "$base.llvm.so")
        link --icf=all "$base.llvm.o" -o "$base.icf.so"; llvm_icf=$(text_of "$base.icf.so")
        link --icf=all "$base.gmf.o" -o "$base.gmf.so"; llvm_gmf=$(text_of "$base.gmf.so")
        gmf_saves=$(pct "$llvm_plain" "$llvm_gmf")
    fi
    # Ours: the object's .text as the report gives it (the unmerged build is --size-baseline's,
    # which is not written as a file); the merged objects are linked too, to show that they
    # link and that linking adds nothing.
    "$bin" "$base.clif" -o "$base.exact.o" --function-sections --size-baseline --report json >"$base.exact.json"
    "$bin" "$base.clif" --similar -o "$base.similar.o" --function-sections --report json >"$base.similar.json"
    link "$base.exact.o" -o "$base.exact.so"
    link "$base.similar.o" -o "$base.similar.so"
    ours_unmerged=$(json "$base.exact.json" "d['object']['text_bytes_unmerged']")
    ours_exact=$(json "$base.exact.json" "d['object']['text_bytes']")
    ours_similar=$(json "$base.similar.json" "d['object']['text_bytes'] + d['object'].get('record_bytes', 0)")
    linked_similar=$(text_of "$base.similar.so")
    echo "| $n functions, seed $seed | $llvm_plain | $llvm_icf | $llvm_gmf | $gmf_saves | $ours_unmerged | $ours_exact | $ours_similar | $(pct "$ours_unmerged" "$ours_similar") | $linked_similar |"
done
