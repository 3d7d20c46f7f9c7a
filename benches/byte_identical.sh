#!/usr/bin/env bash
# Byte-identical outputs: two clif-merge binaries (a base build and a new one) run on the same
# modules, in every mode, exact and with --similar, and every output compared byte for byte:
# the JSON report, the emitted CLIF and the objects for x86_64 and aarch64. For a change that
# must not change what the tool makes (a refactor, a new API); the last step of issue 22.
#
#     benches/byte_identical.sh BASE NEW
#
# BASE, NEW: the two binaries, e.g. one built from the commit before the change
# (`git worktree add /tmp/base COMMIT && cargo build --release --manifest-path /tmp/base/Cargo.toml
# --target-dir /tmp/base-target`) and target/release/clif-merge.
#
# Environment: CORPUS (folder of real modules, default ../shared/corpus: every .clif and
# .clif.xz in it), GENMOD (the module generator, default ../shared/tools/genmod.py; skipped
# with a note when absent), OUT (work folder, default target/byte-identical), GENERATED
# (`;`-separated `FUNCTIONS DUP-RATE SEED [more genmod arguments]`, default below), TARGETS
# (default "x86_64 aarch64"), MODES (default "safe thunks aliases").
#
# Prints one line per module, mode and merge (`same` or what differs) and exits 1 if anything
# differs. The JSON report holds no timings (those go to standard error with --time-passes), so
# it is compared as is. Needs python3 for the generated modules; installs nothing.
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BASE NEW" >&2
    exit 2
fi
base=$(realpath "$1")
new=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
corpus=${CORPUS:-$here/../shared/corpus}
genmod=${GENMOD:-$here/../shared/tools/genmod.py}
out=${OUT:-$here/target/byte-identical}
generated=${GENERATED:-"300 0.3 1; 2000 0.2 2 --near-rate 0.05; 4000 0.25 3 --recursive-frac 0.2 --near-rate 0.03"}
targets=${TARGETS:-"x86_64 aarch64"}
modes=${MODES:-"safe thunks aliases"}
mkdir -p "$out"

modules=()
if [[ -d $corpus ]]; then
    for f in "$corpus"/*.clif "$corpus"/*.clif.xz; do
        [[ -e $f ]] && modules+=("$f")
    done
else
    echo "note: no corpus at $corpus; real modules skipped" >&2
fi
if [[ -f $genmod ]]; then
    IFS=';' read -ra specs <<<"$generated"
    for spec in "${specs[@]}"; do
        read -r n rate seed extra <<<"$spec"
        name="gen-$n-$seed"
        # shellcheck disable=SC2086  # the extra arguments are words
        python3 "$genmod" --functions "$n" --dup-rate "$rate" --seed "$seed" $extra \
            --out-ll "$out/$name.ll" --out-clif "$out/$name.clif" >/dev/null
        modules+=("$out/$name.clif")
    done
else
    echo "note: no generator at $genmod; generated modules skipped" >&2
fi

differences=0
for module in "${modules[@]}"; do
    name=$(basename "$module")
    for mode in $modes; do
        for merge in exact similar; do
            flags=(--mode "$mode")
            [[ $merge == similar ]] && flags+=(--similar)
            verdict=()
            for target in $targets; do
                for side in base new; do
                    bin=$base
                    [[ $side == new ]] && bin=$new
                    dir="$out/$side/$name/$mode-$merge-$target"
                    mkdir -p "$dir"
                    "$bin" "$module" "${flags[@]}" --report json --emit-clif "$dir/merged.clif" \
                        -o "$dir/merged.o" --target "$target" >"$dir/report.json" 2>"$dir/stderr" \
                        || echo "exit $?" >>"$dir/stderr"
                done
                for file in report.json merged.clif merged.o stderr; do
                    if ! cmp -s "$out/base/$name/$mode-$merge-$target/$file" \
                        "$out/new/$name/$mode-$merge-$target/$file"; then
                        verdict+=("$target/$file differs")
                    fi
                done
            done
            if [[ ${#verdict[@]} -eq 0 ]]; then
                printf '%-28s %-8s %-8s same (report, CLIF, objects for %s)\n' \
                    "$name" "$mode" "$merge" "$targets"
            else
                differences=1
                printf '%-28s %-8s %-8s DIFFERENT: %s\n' "$name" "$mode" "$merge" "${verdict[*]}"
            fi
        done
    done
done
exit $differences
