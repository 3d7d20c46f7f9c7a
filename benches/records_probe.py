#!/usr/bin/env python3
"""What read-only records would save over stack arguments (issue 21, item 4): writes, for one
shape of group and a member count, the members as CLIF and the merge a record would make,
written by hand (the shared body loads each hole from a pointer argument, `readonly notrap
aligned`; each member is a thunk passing `symbol_value` of its record). `records_probe.sh`
compiles both and adds the records' bytes. Shapes:

- `constants N H`: N members `(i64) -> i64`, H i64 constants in a chain of arithmetic;
- `errors N`: four calls of `%report_error(ptr, len, code)`, message addresses and lengths
  differing (a record holds 4 addresses and 4 lengths);
- `calls N`: ten direct callees `(i64) -> i64` differing (a record holds 10 addresses).

Usage: records_probe.py SHAPE N [H] OUT_DIR; prints "<members.clif> <record.clif> <record
bytes> <relocations>".
"""
import sys


def thunk(name, sig, call_args, ret):
    result = "v2 = " if ret else ""
    tail = "return v2" if ret else "return"
    return (f"function %{name}{sig} system_v {{\n    gv0 = symbol colocated %rec_{name}\n"
            f"    sig0 = {call_args}\n    fn0 = colocated %shared sig0\nblock0(v0: {sig[1:4]}):\n"
            f"    v1 = symbol_value.i64 gv0\n    {result}call fn0(v0, v1)\n    {tail}\n}}\n")


def constants(n, holes):
    def body(m, record):
        text, acc, k = "", "v0", 100
        for i in range(holes):
            if record:
                text += f"    v{k} = load.i64 readonly notrap aligned v1+{8 * i}\n"
            else:
                value = (m * 7919 + i * 104729) * 65537 % (1 << 40) + (1 << 33)
                text += f"    v{k} = iconst.i64 {value}\n"
            text += (f"    v{k + 1} = imul {acc}, v{k}\n    v{k + 2} = rotl v{k + 1}, v0\n"
                     f"    v{k + 3} = bxor v{k + 2}, v0\n")
            acc, k = f"v{k + 3}", k + 4
        return text + f"    return {acc}\n}}\n"
    members = "\n".join(f"function %k{m}(i64) -> i64 system_v {{\nblock0(v0: i64):\n"
                        + body(m, False) for m in range(n))
    shared = ("; linkage: %shared local\nfunction %shared(i64, i64) -> i64 system_v {\n"
              "block0(v0: i64, v1: i64):\n" + body(0, True))
    thunks = "\n".join(thunk(f"k{m}", "(i64) -> i64", "(i64, i64) -> i64 system_v", True)
                       for m in range(n))
    return members, shared + "\n" + thunks, 8 * holes * n, 0


def errors(n):
    def member(m):
        text = f"function %e{m}(i32) system_v {{\n"
        text += "".join(f"    gv{i} = symbol colocated %msg_{m}_{i}\n" for i in range(4))
        text += "    sig0 = (i64, i64, i32) system_v\n    fn0 = %report_error sig0\nblock0(v0: i32):\n"
        for i in range(4):
            text += (f"    v{10 + 2 * i} = symbol_value.i64 gv{i}\n"
                     f"    v{11 + 2 * i} = iconst.i64 {100 * m + i + 11}\n"
                     f"    call fn0(v{10 + 2 * i}, v{11 + 2 * i}, v0)\n")
        return text + "    return\n}\n"
    shared = ("; linkage: %shared local\nfunction %shared(i32, i64) system_v {\n"
              "    sig0 = (i64, i64, i32) system_v\n    fn0 = %report_error sig0\n"
              "block0(v0: i32, v1: i64):\n")
    for i in range(4):
        shared += (f"    v{10 + 2 * i} = load.i64 readonly notrap aligned v1+{16 * i}\n"
                   f"    v{11 + 2 * i} = load.i64 readonly notrap aligned v1+{16 * i + 8}\n"
                   f"    call fn0(v{10 + 2 * i}, v{11 + 2 * i}, v0)\n")
    shared += "    return\n}\n"
    thunks = "\n".join(thunk(f"e{m}", "(i32)", "(i32, i64) system_v", False) for m in range(n))
    return "\n".join(member(m) for m in range(n)), shared + "\n" + thunks, 64 * n, 4 * n


def calls(n):
    def chain(call):
        text, acc = "", "v0"
        for i in range(10):
            text += call(i, acc) + f"    v{11 + 2 * i} = iadd v{10 + 2 * i}, v0\n"
            acc = f"v{11 + 2 * i}"
        return text + f"    return {acc}\n}}\n"
    members = "\n".join(
        f"function %c{m}(i64) -> i64 system_v {{\n    sig0 = (i64) -> i64 system_v\n"
        + "".join(f"    fn{i} = %c{m}_{i} sig0\n" for i in range(10)) + "block0(v0: i64):\n"
        + chain(lambda i, acc: f"    v{10 + 2 * i} = call fn{i}({acc})\n") for m in range(n))
    shared = ("; linkage: %shared local\nfunction %shared(i64, i64) -> i64 system_v {\n"
              "    sig0 = (i64) -> i64 system_v\nblock0(v0: i64, v1: i64):\n"
              + chain(lambda i, acc: f"    v{30 + i} = load.i64 readonly notrap aligned v1+{8 * i}\n"
                      f"    v{10 + 2 * i} = call_indirect sig0, v{30 + i}({acc})\n"))
    thunks = "\n".join(thunk(f"c{m}", "(i64) -> i64", "(i64, i64) -> i64 system_v", True)
                       for m in range(n))
    return members, shared + "\n" + thunks, 80 * n, 10 * n


def main():
    shape, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[-1]
    if shape == "constants":
        made = constants(n, int(sys.argv[3]))
    else:
        made = {"errors": errors, "calls": calls}[shape](n)
    members, record, data, relocs = made
    stem = f"{out}/{shape}_{'_'.join(sys.argv[2:-1])}"
    with open(f"{stem}.clif", "w") as f:
        f.write(members)
    with open(f"{stem}.record.clif", "w") as f:
        f.write(record)
    print(f"{stem}.clif {stem}.record.clif {data} {relocs}")


main()
