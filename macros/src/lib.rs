//! Procedural macros of ruststream. Use them through the `ruststream` crate (or a broker
//! crate's prelude), which re-exports each of them next to the trait it implements.

use proc_macro::TokenStream;

mod app;
mod from_ref;
mod message_part_hint;
mod outgoing;
mod subscriber;

/// Turns an `async fn` into a handler mounted where the argument says.
///
/// The argument is a descriptor expression understood by the broker the handler is included
/// in (for Pulsar, `PulsarSubscription::new(topic, subscription)` with its options, or a bare
/// topic name). The first parameter is the decoded payload, `&T` with `T: Deserialize`; the
/// others are extractors such as `State<T>`. The function returns a `HandlerOutcome`, or
/// anything else that implements `IntoOutcome` (such as `Result<HandlerOutcome, E>`, so that
/// the body can use `?`).
///
/// The macro names the descriptor's type in the handler's `Described` impl, where stable Rust
/// accepts no `impl Trait` and no inference. It reads the type off a string literal
/// (`&'static str`) and off a call of an associated function (`PulsarSubscription::new(..)`,
/// with any method calls after it); for any other expression, such as a function of the
/// service's own that builds the subscription, write the type after it:
/// `#[subscriber(refunds_subscription(), descriptor = PulsarSubscription)]`.
///
/// The macro replaces the function with a unit struct of the same name, so that
/// `b.include(process_refund)` passes the handler; the function body is kept as
/// `process_refund::handle`, callable directly in unit tests.
#[proc_macro_attribute]
pub fn subscriber(args: TokenStream, item: TokenStream) -> TokenStream {
    subscriber::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Writes `main` for the function returning the app.
///
/// The `main` calls `rstream-runner`, which the service must depend on (the error says so if
/// it does not). `#[ruststream::app]` runs the app on tokio;
/// `#[ruststream::app(runtime = "smol")]` or `(runtime = "async-std")` choose the other
/// runtimes, each with the runner's feature of that name.
#[proc_macro_attribute]
pub fn app(args: TokenStream, item: TokenStream) -> TokenStream {
    app::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Gives a message type its default topic: `#[outgoing(name = "refunds")]`.
#[proc_macro_derive(Outgoing, attributes(outgoing))]
pub fn derive_outgoing(item: TokenStream) -> TokenStream {
    outgoing::expand(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Lets handlers take each field of a state struct with `State<FieldType>`.
///
/// Writes `impl FromRef<Struct> for FieldType` for every field (cloning it), except fields
/// marked `#[from_ref(skip)]`. Two fields of one type would conflict: skip one.
#[proc_macro_derive(FromRef, attributes(from_ref))]
pub fn derive_from_ref(item: TokenStream) -> TokenStream {
    from_ref::expand(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
