//! Runtime CPU feature dispatch for the query hot paths.
//!
//! Rank and select are popcount loops; the baseline x86-64 target has no
//! POPCNT instruction, and the software fallback made lookups about 1.5x
//! slower (measured by `pith bench trie`). Building for a newer CPU would
//! crash older ones with "Illegal instruction", as TerarkDB's users found, so
//! instead each hot entry point is compiled twice, once with POPCNT enabled,
//! and picks one at run time. [`multiversion!`] writes the pair.
//!
//! The unsafe code is confined to calling a `#[target_feature]` function
//! after checking, with `is_x86_feature_detected!`, that the CPU has the
//! feature; the functions themselves are safe Rust.

/// True if the CPU has POPCNT (the check is cached by std).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_popcnt() -> bool {
    std::is_x86_feature_detected!("popcnt")
}

/// Defines `$name(&self, ..)` dispatching to `$imp` compiled with POPCNT
/// where the CPU has it, and to `$imp` as built otherwise. `$imp` must be
/// `#[inline(always)]` so the feature reaches the code it calls.
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident(&self $(, $arg:ident : $ty:ty)*) -> $ret:ty = $imp:ident / $fast:ident;) => {
        $(#[$m])*
        $vis fn $name(&self $(, $arg: $ty)*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::has_popcnt() {
                // SAFETY: `$fast` requires only the popcnt target feature,
                // and the CPU was just checked to support it.
                return unsafe { self.$fast($($arg),*) };
            }
            self.$imp($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "popcnt")]
        fn $fast(&self $(, $arg: $ty)*) -> $ret {
            self.$imp($($arg),*)
        }
    };
}
pub(crate) use multiversion;
