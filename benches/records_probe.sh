#!/usr/bin/env bash
# What read-only records would save over stack arguments (issue 21, item 4), on three shapes
# of groups whose members differ in more holes than the free argument registers
# (`records_probe.py`): `.text` bytes of the object (x86_64 and aarch64, `--mode safe`), the
# members unmerged, with `--similar` (judged), forced (`--similar-min-saving=-100000`: stack
# arguments), and merged with a record written by hand: its text, plus the records' bytes, plus
# 24 bytes a relocation (an address in a record is one `R_*_RELATIVE` or symbolic dynamic
# relocation in a PIE or shared library; a `lea`/`adrp` of the same address in code is resolved
# by the linker).
#
#     cargo build --release && bash benches/records_probe.sh
#
# Needs python3 and size (binutils). Writes only under target/records-probe/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/clif-merge"
work="$root/target/records-probe"
mkdir -p "$work"
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
text() { "$bin" "$@" --report json | python3 -c "import json,sys; print(json.load(sys.stdin)['object']['text_bytes'])"; }
# `.text` and `.rodata` (the records) of the object written by `"$bin" MODULE ... -o OBJ ...`.
text_and_rodata() {
    "$bin" "$@" >/dev/null
    local obj; obj=$(printf '%s\n' "$@" | grep -A1 -x -- -o | tail -1)
    size -A "$obj" | awk '$1 ~ /^\.(text|rodata)/ { s += $2 } END { print s }'
}

echo "| shape | members | target | unmerged | --similar | --similar, forced | record by hand: text + data + relocs |"
echo "|---|---:|---|---:|---:|---:|---:|"
for probe in "constants 2 8" "constants 4 8" "constants 2 12" "constants 4 12" "constants 2 20" \
             "constants 4 20" "errors 2" "errors 4" "errors 8" "calls 2" "calls 4" "calls 8"; do
    # shellcheck disable=SC2086
    read -r members record data relocs < <(python3 "$root/benches/records_probe.py" $probe "$work")
    for target in x86_64 aarch64; do
        unmerged=$(text "$members" -o "$work/u.o" --target "$target")
        judged=$(text_and_rodata "$members" --similar -o "$work/j.o" --target "$target")
        forced=$(text_and_rodata "$members" --similar --similar-min-saving=-100000 -o "$work/s.o" --target "$target")
        rec=$(text "$record" -o "$work/r.o" --target "$target")
        total=$((rec + data + 24 * relocs))
        echo "| ${probe%% *} | ${probe#* } | $target | $unmerged | $judged | $forced | $rec + $data + $((24 * relocs)) = $total |"
    done
done
