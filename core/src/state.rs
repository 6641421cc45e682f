//! Pieces of the application state handed to handlers.
//!
//! A service builds one state value at startup (`on_startup`) and handlers ask for parts of it
//! by type: a parameter `State(processor): State<Arc<Processor>>` takes an `Arc<Processor>` out
//! of the app state through [`FromRef`]. `#[derive(FromRef)]` on the state struct writes one
//! [`FromRef`] impl per field, so handlers never see the whole state unless they ask for it.

/// A part of the application state, taken by type.
///
/// The inner value is public so that a handler can destructure it in its parameter list:
/// `State(processor): State<Arc<Processor>>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<T>(pub T);

/// How to take a `Self` out of an app state `S`.
///
/// Every `Clone` type can be taken from itself, so a handler may ask for the whole state.
/// Fields of a state struct get impls from `#[derive(FromRef)]`. Keep the parts cheap to clone
/// (`Arc`s, handles): a part is cloned for every delivery that asks for it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be taken from the app state `{S}`",
    label = "no `FromRef<{S}>` for `{Self}`",
    note = "add `#[derive(FromRef)]` to the state struct `{S}` so that each field type can be \
            asked for with `State<FieldType>`, or implement `FromRef<{S}> for {Self}` by hand"
)]
pub trait FromRef<S> {
    /// Take the part out of the state.
    fn from_ref(state: &S) -> Self;
}

impl<T: Clone> FromRef<T> for T {
    fn from_ref(state: &T) -> T {
        state.clone()
    }
}
