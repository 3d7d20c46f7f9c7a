#!/usr/bin/env bash
# Global merging on generated programs, run and compared: a check of behaviour, not of size.
#
#     cargo build --release --example split_units --example compile_unmerged && cargo build --release
#     bash benches/global_programs.sh [SEED...]      # default seeds 1 to 6
#
# For each seed: `../shared/tools/genmod.py` writes a module of FUNCS functions (default 2,500)
# with planted duplicates, near-duplicates, callers and recursion; `examples/split_units` splits
# it into 2 to 6 units (by seed); a C driver calls every function (a buffer pointer and
# pseudo-random arguments) and prints each result and a hash of the buffer. The units are
# summarized and combined, and round 2 is run in every mode, exact and `--similar`; each linked
# program (`cc`, no ICF) must print what the unmerged units print. Then a changed unit 1 (a
# third of its large integer constants bumped) is rebuilt against the *old* summary, and the
# program must print what the changed unmerged units print. With AARCH64=1 the same on aarch64
# (`aarch64-linux-gnu-gcc`, `qemu-aarch64`), `--mode aliases` and `safe`. Each merged program is
# linked with every linker of LINKERS (default: bfd gold lld), with and without --gc-sections,
# and with its units in every rotation of their order (each unit once first: the first copy of
# a COMDAT group is the one a linker keeps); ORDERS=one links them in one order only. Exit 1
# on any difference. Writes only under target/global-programs/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
profile=${PROFILE:-release}   # PROFILE=debug: the debug builds (cargo build --examples)
bin="$root/target/$profile/clif-merge"
split="$root/target/$profile/examples/split_units"
unmerged="$root/target/$profile/examples/compile_unmerged"
genmod="$root/../shared/tools/genmod.py"
work="$root/target/global-programs"
funcs=${FUNCS:-2500}
seeds=("$@"); [ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3 4 5 6)
for tool in "$bin" "$split" "$unmerged"; do
    [ -x "$tool" ] || { echo "build first (see the top of $0)" >&2; exit 1; }
done
[ -f "$genmod" ] || { echo "needs ../shared/tools/genmod.py beside the project" >&2; exit 1; }

# The driver: every function whose parameters and result are i64 (genmod's are), called once.
write_driver() { # MODULE.clif > driver.c
    python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
print('#include <stdio.h>\n#include <stdint.h>\n#include <string.h>')
print('static unsigned char buf[1 << 16] __attribute__((aligned(16)));')
print('static uint64_t buf_hash(void) { uint64_t h = 1469598103934665603ull;'
      ' for (int i = 0; i < (1 << 16); i++) { h ^= buf[i]; h *= 1099511628211ull; } return h; }')
print('static uint64_t x = 12345;')
print('static int64_t next(int shift) { x = x * 6364136223846793005ull + 1442695040888963407ull;'
      ' return (int64_t)(x >> shift); }')
calls = []
for name, params, ret in re.findall(r'^function %(\w+)\(([^)]*)\)(?: -> ([\w, ]+))? system_v', text, re.M):
    params = [p.strip() for p in params.split(',') if p.strip()]
    if any(p != 'i64' for p in params) or (ret and ret.strip() != 'i64'):
        continue
    print(f'extern {"int64_t" if ret else "void"} {name}({", ".join(["int64_t"] * len(params)) or "void"});')
    # Arguments are computed one statement each: C leaves the order of evaluating a call's
    # arguments open, and the next() sequence must not depend on the compiler.
    body = ['memset(buf, 0x5a, sizeof buf);']
    args = []
    for i in range(len(params)):
        if i == 0:
            args.append('(int64_t)(intptr_t)(buf + 4096)')
        else:
            body.append(f'int64_t a{i} = next({2 + i});')
            args.append(f'a{i}')
    call = f'{name}({", ".join(args)})'
    if ret:
        body.append(f'int64_t r = {call};')
        body.append(f'printf("{name} %lld %llx\\n", (long long)r, (unsigned long long)buf_hash());')
    else:
        body.append(f'{call};')
        body.append(f'printf("{name} %llx\\n", (unsigned long long)buf_hash());')
    calls.append('{ ' + ' '.join(body) + ' }')
print('int main(void) {')
for c in calls:
    print('    ' + c)
print('    return 0;\n}')
PY
}

# A changed unit: about a third of the integer constants of four or more digits bumped by one
# (genmod's mixing constants; small ones bound loops and recursion).
change_unit() { # IN OUT SEED
    python3 - "$@" <<'PY'
import re, sys, random
random.seed(int(sys.argv[3]))
text = open(sys.argv[1]).read()
bump = lambda m: m.group(1) + str(int(m.group(2)) + 1) if random.random() < 0.3 else m.group(0)
open(sys.argv[2], 'w').write(re.sub(r'(iconst\.i64 )(-?\d{4,})\b', bump, text))
PY
}

read -r -a linkers <<< "${LINKERS:-bfd gold lld}"
# A cross compiler looks for ld.lld among its own tools only: -B a folder that has it.
mkdir -p "$work/lld-bin"
ln -sf "$(command -v ld.lld || echo /usr/bin/ld.lld)" "$work/lld-bin/ld.lld"

failed=0
links=0
check() { # TAG EXPECTED.out CC RUN... -- OBJECTS
    local tag=$1 expected=$2 cc=$3; shift 3
    local run=(); while [ "$1" != -- ]; do run+=("$1"); shift; done; shift
    local objects=("$@") n=$# first
    local firsts; firsts=$(seq 0 $((n - 1))); [ "${ORDERS:-rotations}" = one ] && firsts=0
    for first in $firsts; do
        local order=("${objects[@]:first}" "${objects[@]:0:first}")
        for ld in "${linkers[@]}"; do
            for gc in "" -Wl,--gc-sections; do
                local flags=(-fuse-ld="$ld" $gc)
                [ "$ld" = lld ] && [ "$cc" != cc ] && flags+=(-B "$work/lld-bin")
                local what="$tag, ld.$ld${gc:+ --gc-sections}, unit $first first"
                links=$((links + 1))
                if ! $cc -no-pie "${flags[@]}" "driver-$cc.o" "${order[@]}" -o "$tag.exe" 2> "$tag.link"; then
                    echo "seed $seed: $what: the link fails: $(head -c 300 "$tag.link")" >&2
                    failed=1
                    continue
                fi
                "${run[@]}" "./$tag.exe" > "$tag.out" || echo "$tag: exit $?" >> "$tag.out"
                if ! cmp -s "$expected" "$tag.out"; then
                    echo "seed $seed: $what prints other than $expected" >&2
                    failed=1
                fi
            done
        done
    done
}

for seed in "${seeds[@]}"; do
    n=$((2 + seed % 5))
    dir="$work/seed$seed"; rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
    python3 "$genmod" --functions "$funcs" --dup-rate 0.3 --near-rate 0.2 --transitive-frac 0.3 \
        --permute-frac 0.5 --recursive-frac 0.15 --seed "$seed" --out-ll m.ll --out-clif m.clif \
        --out-expect m.expect.json > genmod.log 2>&1
    "$split" m.clif "$n" . >/dev/null
    units=$(seq 0 $((n - 1)))
    write_driver m.clif > driver.c
    change_unit unit1.clif unit1-changed.clif "$seed"
    unit_file() { # K CHANGED?
        if [ "$1" = 1 ] && [ "$2" = changed ]; then echo unit1-changed.clif; else echo "unit$1.clif"; fi
    }
    for k in $units; do "$bin" summarize "unit$k.clif" -o "unit$k.summary"; done
    "$bin" combine unit*.summary -o all.summary

    targets=(x86_64); [ "${AARCH64:-0}" = 1 ] && targets+=(aarch64)
    for arch in "${targets[@]}"; do
        if [ "$arch" = x86_64 ]; then
            cc=cc; run=(); triple=x86_64-unknown-linux-gnu; modes="safe aliases thunks"
        else
            cc=aarch64-linux-gnu-gcc; run=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
            triple=aarch64-unknown-linux-gnu; modes="safe aliases"
        fi
        $cc -O1 -c driver.c -o "driver-$cc.o"
        for state in same changed; do
            objects=()
            for k in $units; do
                "$unmerged" "$(unit_file "$k" "$state")" --target "$triple" -o "$arch-unmerged-$state$k.o" >/dev/null
                objects+=("$arch-unmerged-$state$k.o")
            done
            $cc -no-pie "driver-$cc.o" "${objects[@]}" -o "$arch-unmerged-$state.exe"
            "${run[@]}" "./$arch-unmerged-$state.exe" > "$arch-unmerged-$state.out"
            for mode in $modes; do
                for flags in "" --similar; do
                    tag="$arch-$state-$mode${flags:+-similar}"
                    objects=()
                    for k in $units; do
                        "$bin" "$(unit_file "$k" "$state")" --target "$triple" --mode "$mode" $flags \
                            --summary all.summary -o "$tag$k.o" >/dev/null
                        objects+=("$tag$k.o")
                    done
                    check "$tag" "$arch-unmerged-$state.out" "$cc" "${run[@]}" -- "${objects[@]}"
                done
            done
        done
        cmp -s "$arch-unmerged-same.out" "$arch-unmerged-changed.out" &&
            echo "seed $seed: the changed unit prints the same (a weak check)" >&2
    done
    echo "seed $seed: $n units, $(wc -l < x86_64-unmerged-same.out) functions called, $(size -A x86_64-unmerged-same.exe | awk '/^\.text/ {print $2}') B of .text unmerged, $(size -A x86_64-same-aliases.exe | awk '/^\.text/ {print $2}') merged (aliases)"
done
[ "$failed" = 0 ] && echo "every program printed what its unmerged build prints ($links links)"
exit "$failed"
