//! `nonzero!`: a non-zero integer checked at compile time.

/// A [`core::num::NonZero`] from an integer literal or constant, checked at compile time.
///
/// `nonzero!(5u32)` is a `NonZeroU32`; `nonzero!(0u32)` does not compile. Use it where the
/// framework asks for a count that cannot be zero, such as `max_attempts`.
///
/// ```
/// let five = ruststream::nonzero!(5u32);
/// assert_eq!(five.get(), 5);
/// ```
///
/// ```compile_fail
/// let zero = ruststream::nonzero!(0u32);
/// ```
#[macro_export]
macro_rules! nonzero {
    ($value:expr) => {
        const {
            match ::core::num::NonZero::new($value) {
                ::core::option::Option::Some(n) => n,
                ::core::option::Option::None => {
                    ::core::panic!("nonzero!: the value is zero; give a value of at least 1")
                }
            }
        }
    };
}
