#!/usr/bin/env bash
# Object sizes and whole-run times, with and without merging, for every module of the corpus,
# against the reference a user would otherwise reach for: the module compiled without merging,
# one section per function, linked by `ld.lld --icf=all`.
#
#     benches/objsize.sh              # every .clif / .clif.xz file in ../shared/corpus/
#
# Environment: CORPUS (folder of modules, default ../shared/corpus), OUT (work folder, default
# target/objsize), RUNS (timed runs per command, default 3; the median is reported), MODULES
# (space-separated file names, to limit the modules).
#
# Needs ld.lld (Debian package lld), readelf and size (binutils) or llvm-size; installs nothing.
# Builds `cargo build --release` and the example `compile_unmerged` first.
#
# Per module, in OUT/<module>/:
#   unmerged.o, unmerged-fs.o   no merging, no folding (examples/compile_unmerged.rs), without
#                               and with --function-sections
#   default.o, default-fs.o     clif-merge --mode safe (the default)   (+ .json reports)
#   aliases.o, aliases-fs.o     clif-merge --mode aliases              (+ .json reports)
#   *.so                        each linked with `ld.lld -shared` (the modules call undefined
#                               Wasmtime builtins, u805306368:N, so a shared object is linked):
#     unmerged.so               unmerged.o, no ICF
#     lld-icf.so                unmerged-fs.o, --icf=all
#     lld-icf-bsymbolic.so      unmerged-fs.o, --icf=all -Bsymbolic (exported symbols bound
#                               locally: the assumption clif-merge makes for `export` functions)
#     ours-default.so           default.o
#     ours-aliases.so           aliases.o
#     ours-aliases-fs-icf.so    aliases-fs.o, --icf=all (what lld still finds after us)
#   classes-*.txt               functions that one side folded and the other did not
#
# Times are of the whole run (read + verify + merge + compile + write): wall-clock and CPU
# (user + system) seconds, the median of RUNS runs, the three commands taking turns; and the
# medians of the phases each run prints with --time-passes. The machine may be shared, so they
# are noisy; CPU time and the phases are less so than wall-clock time.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CORPUS=${CORPUS:-$ROOT/../shared/corpus}
OUT=${OUT:-$ROOT/target/objsize}
RUNS=${RUNS:-3}
TARGET=x86_64-unknown-linux-gnu

die() {
    echo "objsize.sh: $*" >&2
    exit 1
}

command -v ld.lld >/dev/null ||
    die "ld.lld not found: install LLVM's linker (Debian/Ubuntu: apt-get install lld) and rerun"
command -v readelf >/dev/null || die "readelf not found: install binutils"
if command -v size >/dev/null; then
    SIZE=size
elif command -v llvm-size >/dev/null; then
    SIZE=llvm-size
else
    die "neither size (binutils) nor llvm-size found"
fi
[ -d "$CORPUS" ] || die "no corpus folder $CORPUS (set CORPUS)"

echo "building (cargo build --release) ..." >&2
(cd "$ROOT" && cargo build --release --quiet && cargo build --release --quiet --example compile_unmerged)
MERGE=$ROOT/target/release/clif-merge
UNMERGED=$ROOT/target/release/examples/compile_unmerged

# The size in bytes of section $2 of the file $1 (0 when absent).
section_size() {
    "$SIZE" -A "$1" | awk -v s="$2" '$1 == s { n = $2 } END { print n + 0 }'
}

# The value of the numeric JSON key $2 in the report $1 (the reports are pretty-printed, one key
# per line; "functions" and "merged" occur once, at the top level).
json_number() {
    grep -o "\"$2\": *[0-9]*" "$1" | head -n 1 | grep -o '[0-9]*$'
}

# "name address" for every defined function symbol of the linked file $1.
function_addresses() {
    readelf -sW "$1" | awk '
        /^Symbol table / { in_symtab = ($0 ~ /\.symtab/); next }
        in_symtab && $4 == "FUNC" && $7 != "UND" { print $8, $2 }' | sort
}

# Functions that share their address with another function in $1 (folded there) but have their
# own address in $2: prints, per class of $1 that $2 splits, the class as $2 splits it, and on
# the last line "split N": how many more bodies $2 keeps for these classes.
classes_split() {
    join <(function_addresses "$1") <(function_addresses "$2") | awk '
        { a[$1] = $2; b[$1] = $3; members[$2] = members[$2] " " $1; count[$2]++ }
        END {
            extra = 0
            for (k in members) {
                if (count[k] < 2) continue
                n = split(members[k], m, " ")
                distinct = 0; line = ""
                delete seen
                for (i = 1; i <= n; i++) {
                    if (!(b[m[i]] in seen)) { seen[b[m[i]]] = 1; distinct++ }
                    line = line " " m[i] "@" b[m[i]]
                }
                if (distinct > 1) { print "class" line; extra += distinct - 1 }
            }
            print "split " extra
        }' | sort
}

# The median of the numbers on standard input.
median() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) print "-"
        else if (NR % 2) print v[(NR + 1) / 2]
        else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Runs a command once: appends "wall-seconds cpu-seconds" (user + system) to $1.times and the
# command's standard error (its --time-passes phases) to $1.phases; standard output is dropped.
timed_run() {
    local base=$1
    shift
    local TIMEFORMAT='%R %U %S'
    { time "$@" >/dev/null 2>>"$base.phases"; } 2>>"$base.raw"
    tail -n 1 "$base.raw" | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' >>"$base.times"
}

# Median wall and CPU seconds, and median milliseconds of the phase $2, of the runs in $1.
median_wall() { awk '{ print $1 }' "$1.times" | median; }
median_cpu() { awk '{ print $2 }' "$1.times" | median; }
median_phase() { awk -v k="$2-ms:" '$1 == k { print $2 }' "$1.phases" | median; }

mkdir -p "$OUT"
shopt -s nullglob
if [ -n "${MODULES:-}" ]; then
    files=()
    for m in $MODULES; do files+=("$CORPUS/$m"); done
else
    files=("$CORPUS"/*.clif "$CORPUS"/*.clif.xz)
fi
[ ${#files[@]} -gt 0 ] || die "no .clif or .clif.xz files in $CORPUS"

table=$OUT/table.md
details=$OUT/details.md
phases=$OUT/phases.md
{
    echo "| module | functions | compiled by Cranelift, default mode | compiled, --mode aliases | read + verify ms: unmerged / default / aliases | merge pass ms: – / default / aliases | compile + object ms: unmerged / default / aliases |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
} >"$phases"
{
    echo "| module | functions | merged (IR) | folded (machine code) | .text unmerged (object) | .text default mode | .text --mode aliases | linked .text: lld --icf=all, unmerged --function-sections | linked .text: lld --icf=all -Bsymbolic | linked .text: ours, --mode aliases | time unmerged, wall / CPU (s) | time merged, default mode, wall / CPU (s) | time merged, --mode aliases, wall / CPU (s) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$table"
{
    echo "| module | .text unmerged, --function-sections | .text --mode aliases, --function-sections | linked .text: unmerged, no ICF | linked .text: ours, default mode | linked .text: ours aliases --function-sections + lld --icf=all | .plt: lld --icf=all | .plt: ours aliases | bodies lld --icf=all folds that ours keeps | bodies ours folds that lld --icf=all keeps | … that lld --icf=all -Bsymbolic keeps |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$details"

for file in "${files[@]}"; do
    [ -f "$file" ] || die "no such module: $file"
    name=$(basename "$file")
    mod=${name%.xz}
    mod=${mod%.clif}
    dir=$OUT/$mod
    mkdir -p "$dir"
    echo "== $mod" >&2

    # (a) unmerged objects, and the unmerged size as clif-merge reports it.
    "$UNMERGED" "$file" --target "$TARGET" -o "$dir/unmerged.o" >"$dir/unmerged.json"
    "$UNMERGED" "$file" --target "$TARGET" --function-sections -o "$dir/unmerged-fs.o" \
        >"$dir/unmerged-fs.json"
    # (b) ours: default mode (with the --size-baseline check) and --mode aliases, without and
    # with --function-sections.
    "$MERGE" "$file" --target "$TARGET" -o "$dir/default.o" --size-baseline --report json \
        >"$dir/default.json"
    "$MERGE" "$file" --target "$TARGET" -o "$dir/default-fs.o" --function-sections \
        --report json >"$dir/default-fs.json"
    "$MERGE" "$file" --target "$TARGET" -o "$dir/aliases.o" --mode aliases --report json \
        >"$dir/aliases.json"
    "$MERGE" "$file" --target "$TARGET" -o "$dir/aliases-fs.o" --mode aliases \
        --function-sections --report json >"$dir/aliases-fs.json"

    # (c) links.
    ld.lld -shared -o "$dir/unmerged.so" "$dir/unmerged.o"
    ld.lld -shared --icf=all --print-icf-sections -o "$dir/lld-icf.so" "$dir/unmerged-fs.o" \
        >"$dir/lld-icf.txt"
    ld.lld -shared --icf=all -Bsymbolic --print-icf-sections -o "$dir/lld-icf-bsymbolic.so" \
        "$dir/unmerged-fs.o" >"$dir/lld-icf-bsymbolic.txt"
    ld.lld -shared -o "$dir/ours-default.so" "$dir/default.o"
    ld.lld -shared -o "$dir/ours-aliases.so" "$dir/aliases.o"
    ld.lld -shared --icf=all --print-icf-sections -o "$dir/ours-aliases-fs-icf.so" \
        "$dir/aliases-fs.o" >"$dir/ours-aliases-fs-icf.txt"

    classes_split "$dir/lld-icf.so" "$dir/ours-aliases.so" >"$dir/classes-lld-not-ours.txt"
    classes_split "$dir/ours-aliases.so" "$dir/lld-icf.so" >"$dir/classes-ours-not-lld.txt"
    classes_split "$dir/ours-aliases.so" "$dir/lld-icf-bsymbolic.so" \
        >"$dir/classes-ours-not-lld-bsymbolic.txt"
    classes_split "$dir/lld-icf-bsymbolic.so" "$dir/ours-aliases.so" \
        >"$dir/classes-lld-bsymbolic-not-ours.txt"

    # (d) whole-run times, objects without --function-sections; the three commands take turns,
    # so that a change of load on the machine hits them alike.
    rm -f "$dir"/time-*.times "$dir"/time-*.phases "$dir"/time-*.raw
    for _ in $(seq "$RUNS"); do
        timed_run "$dir/time-unmerged" "$UNMERGED" "$file" --target "$TARGET" -o "$dir/time.o" \
            --time-passes
        timed_run "$dir/time-default" "$MERGE" "$file" --target "$TARGET" -o "$dir/time.o" \
            --report json --time-passes
        timed_run "$dir/time-aliases" "$MERGE" "$file" --target "$TARGET" -o "$dir/time.o" \
            --mode aliases --report json --time-passes
    done
    rm -f "$dir/time.o"
    wall_unmerged=$(median_wall "$dir/time-unmerged")
    wall_default=$(median_wall "$dir/time-default")
    wall_aliases=$(median_wall "$dir/time-aliases")
    cpu_unmerged=$(median_cpu "$dir/time-unmerged")
    cpu_default=$(median_cpu "$dir/time-default")
    cpu_aliases=$(median_cpu "$dir/time-aliases")
    read_unmerged=$(median_phase "$dir/time-unmerged" read-and-verify)
    read_default=$(median_phase "$dir/time-default" read-and-verify)
    read_aliases=$(median_phase "$dir/time-aliases" read-and-verify)
    compile_unmerged=$(median_phase "$dir/time-unmerged" compile-and-object)
    compile_default=$(median_phase "$dir/time-default" compile-and-object)
    compile_aliases=$(median_phase "$dir/time-aliases" compile-and-object)
    pass_default=$(median_phase "$dir/time-default" pass-time)
    pass_aliases=$(median_phase "$dir/time-aliases" pass-time)
    # Functions Cranelift compiled: those left compiled, and those folded after compiling.
    compiled_default=$(($(json_number "$dir/default.json" functions_compiled) +
        $(json_number "$dir/default.json" folded_machine_code)))
    compiled_aliases=$(($(json_number "$dir/aliases.json" functions_compiled) +
        $(json_number "$dir/aliases.json" folded_machine_code)))
    thunks_default=$(json_number "$dir/default.json" thunks)

    functions=$(json_number "$dir/aliases.json" functions)
    merged=$(json_number "$dir/aliases.json" merged)
    folded=$(json_number "$dir/aliases.json" folded_machine_code)
    text_unmerged=$(json_number "$dir/default.json" text_bytes_unmerged)
    text_unmerged_example=$(json_number "$dir/unmerged.json" text_bytes)
    [ "$text_unmerged" = "$text_unmerged_example" ] ||
        echo "warning: $mod: --size-baseline says $text_unmerged, compile_unmerged $text_unmerged_example" >&2
    text_default=$(json_number "$dir/default.json" text_bytes)
    text_aliases=$(json_number "$dir/aliases.json" text_bytes)
    text_unmerged_fs=$(json_number "$dir/unmerged-fs.json" text_bytes)
    text_aliases_fs=$(json_number "$dir/aliases-fs.json" text_bytes)
    linked_unmerged=$(section_size "$dir/unmerged.so" .text)
    linked_lld=$(section_size "$dir/lld-icf.so" .text)
    linked_lld_bsym=$(section_size "$dir/lld-icf-bsymbolic.so" .text)
    linked_default=$(section_size "$dir/ours-default.so" .text)
    linked_aliases=$(section_size "$dir/ours-aliases.so" .text)
    linked_aliases_fs_icf=$(section_size "$dir/ours-aliases-fs-icf.so" .text)
    plt_lld=$(section_size "$dir/lld-icf.so" .plt)
    plt_aliases=$(section_size "$dir/ours-aliases.so" .plt)
    split_lld=$(awk '$1 == "split" { print $2 }' "$dir/classes-lld-not-ours.txt")
    split_ours=$(awk '$1 == "split" { print $2 }' "$dir/classes-ours-not-lld.txt")
    split_ours_bsym=$(awk '$1 == "split" { print $2 }' "$dir/classes-ours-not-lld-bsymbolic.txt")

    echo "| $mod | $functions | $merged | $folded | $text_unmerged | $text_default | $text_aliases | $linked_lld | $linked_lld_bsym | $linked_aliases | $wall_unmerged / $cpu_unmerged | $wall_default / $cpu_default | $wall_aliases / $cpu_aliases |" >>"$table"
    echo "| $mod | $functions | $compiled_default (+ $thunks_default jump thunks) | $compiled_aliases | $read_unmerged / $read_default / $read_aliases | – / $pass_default / $pass_aliases | $compile_unmerged / $compile_default / $compile_aliases |" >>"$phases"
    echo "| $mod | $text_unmerged_fs | $text_aliases_fs | $linked_unmerged | $linked_default | $linked_aliases_fs_icf | $plt_lld | $plt_aliases | $split_lld | $split_ours | $split_ours_bsym |" >>"$details"
    if [ "$linked_aliases" -gt "$linked_lld" ]; then
        echo "note: $mod: ours (--mode aliases) linked .text $linked_aliases > lld --icf=all $linked_lld; see $dir/classes-lld-not-ours.txt" >&2
    fi
done

echo
cat "$table"
echo
cat "$details"
echo
cat "$phases"
echo
echo "(work files and per-module class differences in $OUT; times: median of $RUNS runs, $(nproc) cores)"
