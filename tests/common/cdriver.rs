//! A C driver that calls every function of a generated module and prints what each returns
//! and what it left in memory. Used by the global merging tests (which include this file on
//! its own).

use clif_merge::ClifModule;

/// A C driver calling every function of `module` (genmod's take and return `i64`): the first
/// argument points into a buffer, the others are pseudo-random, each computed in a statement
/// of its own (C leaves the order of a call's arguments open). It prints every result and a
/// hash of the buffer after each call.
pub fn driver_for(module: &ClifModule) -> String {
    use cranelift_codegen::ir::types::I64;
    let mut decls = String::new();
    let mut calls = String::new();
    for mf in module.functions() {
        let sig = &mf.func.signature;
        let all_i64 =
            |ps: &[cranelift_codegen::ir::AbiParam]| ps.iter().all(|p| p.value_type == I64);
        if !all_i64(&sig.params) || !all_i64(&sig.returns) || sig.returns.len() > 1 {
            continue;
        }
        let name = mf.name.to_string();
        let name = name.strip_prefix('%').expect("genmod names are %names");
        let ret = if sig.returns.is_empty() {
            "void"
        } else {
            "int64_t"
        };
        let params = vec!["int64_t"; sig.params.len()].join(", ");
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params
        };
        decls += &format!("extern {ret} {name}({params});\n");
        calls += "    memset(buf, 0x5a, sizeof buf);\n    {\n";
        let mut args = Vec::new();
        for i in 0..sig.params.len() {
            if i == 0 {
                args.push("(int64_t)(intptr_t)(buf + 4096)".to_string());
            } else {
                calls += &format!("        int64_t a{i} = next({});\n", 2 + i);
                args.push(format!("a{i}"));
            }
        }
        let call = format!("{name}({})", args.join(", "));
        if sig.returns.is_empty() {
            calls += &format!(
                "        {call};\n        printf(\"{name} %llx\\n\", (unsigned long long)buf_hash());\n"
            );
        } else {
            calls += &format!(
                "        int64_t r = {call};\n        printf(\"{name} %lld %llx\\n\", (long long)r, (unsigned long long)buf_hash());\n"
            );
        }
        calls += "    }\n";
    }
    format!(
        "#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n\
         static unsigned char buf[1 << 16] __attribute__((aligned(16)));\n\
         static uint64_t buf_hash(void) {{ uint64_t h = 1469598103934665603ull;\n\
         for (int i = 0; i < (1 << 16); i++) {{ h ^= buf[i]; h *= 1099511628211ull; }} return h; }}\n\
         static uint64_t x = 12345;\n\
         static int64_t next(int shift) {{ x = x * 6364136223846793005ull + 1442695040888963407ull;\n\
         return (int64_t)(x >> shift); }}\n{decls}int main(void) {{\n{calls}    return 0;\n}}\n"
    )
}
