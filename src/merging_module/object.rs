//! A [`MergingModule`] in front of an `ObjectModule` for a target named as on the command line:
//! what every embedder that writes an object would otherwise assemble from four crates (the
//! ISA's lookup and flags, the object builder, the object module).

use super::MergingModule;
use crate::emit::object::{IsaSettings, ObjectError, ObjectOptions, OptLevel};
use crate::pass::MergeOptions;
use cranelift_module::default_libcall_names;
use cranelift_object::{ObjectBuilder, ObjectModule};

impl MergingModule<ObjectModule> {
    /// Whole-module merging as `options` say ([`MergingModule::with_options`]) in front of an
    /// object for `target`, named `name` in the object (ELF `STT_FILE`). `target` is a target
    /// as `clif-merge --target` takes it: `x86_64`, `aarch64`, or one of
    /// [`SUPPORTED_TARGETS`](crate::emit::object::SUPPORTED_TARGETS); its backend must be built
    /// in (feature `x86_64`, `aarch64`). The code is compiled as `clif-merge -o` compiles it
    /// ([`ObjectOptions`]' defaults: `opt_level=speed`, position-independent, frame pointers
    /// kept, the target's baseline CPU); for other settings, make the `ObjectModule` yourself.
    ///
    /// ```
    /// use clif_merge::cranelift_codegen::cursor::{Cursor, FuncCursor};
    /// use clif_merge::cranelift_codegen::ir::{AbiParam, InstBuilder, types::I64};
    /// use clif_merge::cranelift_module::{Linkage, Module};
    /// use clif_merge::{MergeOptions, MergingModule};
    ///
    /// let mut module = MergingModule::for_object("x86_64", "demo", MergeOptions::default())?;
    /// for name in ["answer_a", "answer_b"] {
    ///     let mut ctx = module.make_context();
    ///     ctx.func.signature.returns.push(AbiParam::new(I64));
    ///     let id = module.declare_function(name, Linkage::Export, &ctx.func.signature)?;
    ///     let mut pos = FuncCursor::new(&mut ctx.func);
    ///     let block = pos.func.dfg.make_block();
    ///     pos.insert_block(block);
    ///     let answer = pos.ins().iconst(I64, 42);
    ///     pos.ins().return_(&[answer]);
    ///     module.define_function(id, &mut ctx)?;
    /// }
    /// let (object, report) = module.finish()?;
    /// // `answer_b` (function 1 of the module) is a thunk of `answer_a` now.
    /// assert_eq!(report.merged, 1);
    /// assert_eq!(report.classes[0].replaced[0].name.to_string(), "u0:1");
    /// let bytes = object.finish().emit()?;
    /// assert_eq!(&bytes[..4], b"\x7fELF");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A target that is not supported, or whose backend is not built in, is an error:
    ///
    /// ```
    /// use clif_merge::{MergeOptions, MergingModule};
    ///
    /// let Err(refused) = MergingModule::for_object("vax", "demo", MergeOptions::default()) else {
    ///     panic!("no VAX backend");
    /// };
    /// assert!(refused.to_string().starts_with("unsupported target `vax`"));
    /// ```
    pub fn for_object(target: &str, name: &str, options: MergeOptions) -> crate::Result<Self> {
        let object = ObjectOptions {
            target: crate::emit::object::parse_target(target)?,
            opt_level: OptLevel::default(),
            isa: IsaSettings::default(),
            function_sections: false,
            mode: options.mode,
            fold_machine_code: false,
        };
        let isa = crate::emit::object::target_isa(&object)?;
        let builder = ObjectBuilder::new(isa, name, default_libcall_names())
            .map_err(|e| ObjectError::Isa(format!("target {}: {e}", object.target)))?;
        Ok(Self::with_options(ObjectModule::new(builder), options))
    }
}
