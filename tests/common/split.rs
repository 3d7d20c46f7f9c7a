//! A module dealt into units as separate compilation would make them; used by the global
//! merging tests and benches (which include this file on its own).

use clif_merge::ClifModule;

/// The module's functions dealt to `n` units, function `i` (in layout order) to unit `i mod n`:
/// calls to functions of other units become imports. An alias goes with its target.
pub fn split_units(module: &ClifModule, n: usize) -> Vec<ClifModule> {
    let mut units: Vec<ClifModule> = (0..n).map(|_| ClifModule::new()).collect();
    for (i, mf) in module.functions().enumerate() {
        units[i % n]
            .define((*mf.func).clone(), mf.linkage, None)
            .expect("a function of a valid module");
    }
    for alias in module.aliases() {
        if let Some(unit) = units
            .iter_mut()
            .find(|u| u.resolve(&alias.target).is_some())
        {
            unit.add_alias(alias.clone())
                .expect("its target is in the unit");
        }
    }
    units
}
