//! Testcase names that are not UTF-8 (hostile19): Cranelift's own printing of such a name
//! panics, so a module that held one could not be written as CLIF, reported or debugged. The
//! module refuses them where a function is defined, with an error naming the function.

use clif_merge::module::ModuleError;
use clif_merge::{ClifModule, SymbolLinkage};
use cranelift_codegen::ir::{ExternalName, Function, UserFuncName};

/// A function returning 1 after calling `%callee`, named `name` and its callee renamed
/// `callee`.
fn function(name: UserFuncName, callee: ExternalName) -> Function {
    let text = "function %f() -> i64 system_v {
    fn0 = %callee() -> i64 system_v
block0:
    v0 = call fn0()
    v1 = iconst.i64 1
    return v1
}";
    let mut func = cranelift_reader::parse_functions(text).unwrap().remove(0);
    func.name = name;
    let fn0 = func.dfg.ext_funcs.keys().next().unwrap();
    func.dfg.ext_funcs[fn0].name = callee;
    func
}

/// What defining `func` in an empty module says, which must be the refusal of a name that is
/// not UTF-8, and the module left empty.
fn refusal(func: Function) -> String {
    let mut module = ClifModule::new();
    let refused = module.define(func, SymbolLinkage::Export, None);
    assert_eq!(module.len(), 0);
    match refused {
        Err(e @ ModuleError::NameNotUtf8 { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_function_whose_name_is_not_utf8_is_refused() {
    let message = refusal(function(
        UserFuncName::testcase(b"a\xffb"),
        ExternalName::testcase("g"),
    ));
    assert!(message.contains("%a\u{fffd}b"), "{message}");
}

#[test]
fn a_function_calling_a_name_that_is_not_utf8_is_refused() {
    let message = refusal(function(
        UserFuncName::testcase("caller"),
        ExternalName::testcase(b"x\xfe"),
    ));
    assert!(message.contains("%caller"), "{message}");
}

/// The held neighbour: UTF-8 names, ASCII or not, are defined and written as CLIF.
#[test]
fn utf8_names_are_defined_and_written() {
    let mut module = ClifModule::new();
    let func = function(
        UserFuncName::testcase("caller_é"),
        ExternalName::testcase("callee_ü"),
    );
    module.define(func, SymbolLinkage::Export, None).unwrap();
    let clif = clif_merge::emit::clif::module_to_clif(&module);
    assert!(
        clif.contains("%caller_é") && clif.contains("%callee_ü"),
        "{clif}"
    );
}
