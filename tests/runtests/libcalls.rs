//! The libcalls compiled code may call, written in Rust so that results do not depend on the
//! host's C library: rounding and fused multiply-add (called where the ISA lacks the
//! instruction), and `pshufb` for x86_64 without SSSE3. `memcpy` and the like come from the C
//! library (the JIT's own lookup).

/// The address of the libcall `name`, if it is one of ours.
pub fn lookup(name: &str) -> Option<*const u8> {
    let address = match name {
        "ceil" => ceil as *const u8,
        "ceilf" => ceilf as *const u8,
        "floor" => floor as *const u8,
        "floorf" => floorf as *const u8,
        "trunc" => trunc as *const u8,
        "truncf" => truncf as *const u8,
        "nearbyint" => nearbyint as *const u8,
        "nearbyintf" => nearbyintf as *const u8,
        "fma" => fma as *const u8,
        "fmaf" => fmaf as *const u8,
        #[cfg(target_arch = "x86_64")]
        "__cranelift_x86_pshufb" => pshufb as *const u8,
        _ => return None,
    };
    Some(address)
}

extern "C" fn ceil(x: f64) -> f64 {
    x.ceil()
}

extern "C" fn ceilf(x: f32) -> f32 {
    x.ceil()
}

extern "C" fn floor(x: f64) -> f64 {
    x.floor()
}

extern "C" fn floorf(x: f32) -> f32 {
    x.floor()
}

extern "C" fn trunc(x: f64) -> f64 {
    x.trunc()
}

extern "C" fn truncf(x: f32) -> f32 {
    x.trunc()
}

/// Rounds to the nearest integer, ties to even (the default rounding mode).
extern "C" fn nearbyint(x: f64) -> f64 {
    x.round_ties_even()
}

extern "C" fn nearbyintf(x: f32) -> f32 {
    x.round_ties_even()
}

extern "C" fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

extern "C" fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// SSSE3's `pshufb`: byte `i` of the result is byte `b[i] & 15` of `a`, or zero when bit 7 of
/// `b[i]` is set. Passed and returned in XMM registers, as Cranelift calls it.
#[cfg(target_arch = "x86_64")]
#[allow(improper_ctypes_definitions)]
extern "C" fn pshufb(
    a: std::arch::x86_64::__m128i,
    b: std::arch::x86_64::__m128i,
) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::__m128i;
    // SAFETY: `__m128i` and `[u8; 16]` have the same size, and every bit pattern is valid for
    // both.
    let bytes = |v| unsafe { std::mem::transmute::<__m128i, [u8; 16]>(v) };
    let (a, b) = (bytes(a), bytes(b));
    let out: [u8; 16] = std::array::from_fn(|i| {
        if b[i] & 0x80 != 0 {
            0
        } else {
            a[usize::from(b[i] & 15)]
        }
    });
    // SAFETY: as above.
    unsafe { std::mem::transmute::<[u8; 16], __m128i>(out) }
}
