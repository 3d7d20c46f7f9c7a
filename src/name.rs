//! Function names, exactly as CLIF writes them, and their documented order.

use cranelift_codegen::ir::{ExternalName, Function, UserExternalName, UserFuncName};
use std::cmp::Ordering;
use std::fmt;

/// The name of a function, exactly as CLIF writes it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum FuncName {
    /// `u<namespace>:<index>`
    User {
        /// The namespace (`u<namespace>:`).
        namespace: u32,
        /// The index in it.
        index: u32,
    },
    /// `%name`
    Testcase(Box<str>),
}

impl FuncName {
    /// The name a function definition carries.
    pub fn of_function(func: &Function) -> FuncName {
        match &func.name {
            UserFuncName::User(u) => FuncName::User {
                namespace: u.namespace,
                index: u.index,
            },
            UserFuncName::Testcase(t) => FuncName::testcase(t.raw()),
        }
    }

    /// The first name `func` holds (its own, a callee's, a symbol's) that is a testcase name of
    /// bytes that are not UTF-8, as far as it reads. Cranelift's printing of such a name
    /// panics (`TestcaseName`'s `Display` unwraps the UTF-8), so a module that held one could
    /// not be written as CLIF, reported in a verifier's message or debugged.
    pub(crate) fn first_not_utf8(func: &Function) -> Option<FuncName> {
        let not_utf8 = |raw: &[u8]| std::str::from_utf8(raw).is_err();
        if let UserFuncName::Testcase(t) = &func.name
            && not_utf8(t.raw())
        {
            return Some(FuncName::testcase(t.raw()));
        }
        let callees = func.dfg.ext_funcs.values().map(|ext| &ext.name);
        let symbols = func.global_values.values().filter_map(|gv| match gv {
            cranelift_codegen::ir::GlobalValueData::Symbol { name, .. } => Some(name),
            _ => None,
        });
        callees.chain(symbols).find_map(|name| match name {
            ExternalName::TestCase(t) if not_utf8(t.raw()) => Some(FuncName::testcase(t.raw())),
            _ => None,
        })
    }

    /// A testcase name from its bytes. Names read from text are UTF-8, which is checked
    /// directly: the lossy conversion's walk was 1.5 % of a whole run (one per function).
    pub(crate) fn testcase(raw: &[u8]) -> FuncName {
        match std::str::from_utf8(raw) {
            Ok(text) => FuncName::Testcase(text.into()),
            Err(_) => FuncName::Testcase(String::from_utf8_lossy(raw).into()),
        }
    }

    /// The name an external reference inside `func` refers to, if it is a plain function name
    /// (not a libcall or a known symbol).
    pub fn of_external(name: &ExternalName, func: &Function) -> Option<FuncName> {
        match name {
            ExternalName::User(r) => {
                let u = &func.params.user_named_funcs()[*r];
                Some(FuncName::User {
                    namespace: u.namespace,
                    index: u.index,
                })
            }
            ExternalName::TestCase(t) => Some(FuncName::testcase(t.raw())),
            ExternalName::LibCall(_) | ExternalName::KnownSymbol(_) => None,
        }
    }

    /// The name as a function definition's name.
    pub fn to_user_func_name(&self) -> UserFuncName {
        match self {
            FuncName::User { namespace, index } => UserFuncName::user(*namespace, *index),
            FuncName::Testcase(t) => UserFuncName::testcase(t.as_bytes()),
        }
    }

    /// The name as an external reference from inside `func` (user names are interned in
    /// `func`'s table).
    pub fn to_external(&self, func: &mut Function) -> ExternalName {
        match self {
            FuncName::User { namespace, index } => ExternalName::User(
                func.declare_imported_user_function(UserExternalName::new(*namespace, *index)),
            ),
            FuncName::Testcase(t) => ExternalName::testcase(t.as_bytes()),
        }
    }

    /// Parses `%name` or `u<ns>:<index>` as written in CLIF.
    pub fn parse(text: &str) -> Option<FuncName> {
        if let Some(rest) = text.strip_prefix('%') {
            // `%` alone is a name too: cranelift-reader accepts the empty testcase name.
            let valid = rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            return valid.then(|| FuncName::Testcase(rest.into()));
        }
        let rest = text.strip_prefix('u')?;
        let (ns, idx) = rest.split_once(':')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(ns) || !digits(idx) {
            return None;
        }
        Some(FuncName::User {
            namespace: ns.parse().ok()?,
            index: idx.parse().ok()?,
        })
    }
}

/// The documented order of names, used wherever a choice must not depend on input order:
/// user names first, by namespace then index numerically (`u0:2` < `u0:10`), then testcase names
/// by their bytes.
impl Ord for FuncName {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (
                FuncName::User {
                    namespace: a,
                    index: b,
                },
                FuncName::User {
                    namespace: c,
                    index: d,
                },
            ) => (a, b).cmp(&(c, d)),
            (FuncName::User { .. }, FuncName::Testcase(_)) => Ordering::Less,
            (FuncName::Testcase(_), FuncName::User { .. }) => Ordering::Greater,
            (FuncName::Testcase(a), FuncName::Testcase(b)) => a.as_bytes().cmp(b.as_bytes()),
        }
    }
}

impl PartialOrd for FuncName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// As CLIF writes it (`%foo`, `u0:3`): the JSON report's form.
impl serde::Serialize for FuncName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for FuncName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FuncName::User { namespace, index } => write!(f, "u{namespace}:{index}"),
            FuncName::Testcase(t) => write!(f, "%{t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for text in ["%foo", "%a_1", "u0:3", "u805306368:7"] {
            assert_eq!(FuncName::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(FuncName::parse("%").unwrap().to_string(), "%");
        for bad in ["%a-b", "u0", "u:1", "ux:1", "u0:", "foo", "u0:1x"] {
            assert_eq!(FuncName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn user_names_order_numerically_before_testcase_names() {
        let n = |s| FuncName::parse(s).unwrap();
        assert!(n("u0:2") < n("u0:10"));
        assert!(n("u0:10") < n("u1:0"));
        assert!(n("u9:9") < n("%a"));
        assert!(n("%a") < n("%b"));
    }
}
