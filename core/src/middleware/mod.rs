//! Middleware: code a service puts around its handlers and their publishes.
//!
//! A [`Layer`] sees every delivery before its handler runs ([`Layer::before`]), may answer it
//! itself ([`Flow::Return`]: drop, retry or dead-letter without calling the handler), sees the
//! handler's answer and may change it ([`Layer::after`]), hears how the delivery ended once
//! that is known ([`Layer::completed`]: a dead-letter copy confirmed, a backoff resolved), and
//! may change or refuse every message the handlers publish ([`Layer::publish`]).
//!
//! Layers stack at three scopes, outermost first: the app's (`RustStream::layer`), the
//! broker's (its built-ins, then what the service adds), and the registration's. A [`Stack`]
//! runs `before` from the outermost in, `after` and `completed` from the innermost out, and
//! `publish` from the innermost out (the message leaves through the layers it was made in).
//! A broker's built-ins (its delivery span, its metrics, trace-context propagation, a test
//! harness's recorder) are layers of this same trait, in a [`Stack`] the service may reorder,
//! replace or shorten.
//!
//! # Why hooks, not `tower::Service`
//!
//! `tower-layer` and `tower-service` were the first candidates: they are `no_std`, and a
//! `Service` wrapped by `Layer`s is what axum and tonic users know. They were not taken for
//! three reasons. A subscription's driver keeps each handler call's future in place, of the
//! handler's own type, so that a delivery allocates nothing; layers chosen at run time (app
//! and broker scope, replaced built-ins) would have to be type-erased services
//! (`BoxService`), which box every call's future: one allocation per layer per message, where
//! a layer that holds no state must add none. `Service::call` takes `&mut self` and
//! `poll_ready`, which a driver running many calls at once could only honour by cloning the
//! service per call. And what a layer must see is more than a request and a response: how
//! the delivery finally ended is known only after the copy the outcome asked for is
//! confirmed, long after the handler's future returned. Hooks called in order by the
//! driver, over the same dynamic list at every scope, give all of that with no allocation:
//! the Apache Pulsar Java client's consumer and producer interceptors are hooks for the same
//! reasons. What a layer needs from before to after (its span, a start time) is in the
//! [`Delivery`] it is handed.

mod delivery;
mod end;
mod flow;
mod hooks;
mod layer;
mod mounting;
mod port;
mod stack;

pub use delivery::Delivery;
pub use end::End;
pub use flow::Flow;
pub use hooks::Hooks;
pub use layer::Layer;
pub use mounting::Mounting;
pub use port::LayeredPort;
pub use stack::{Entered, Stack};

#[cfg(test)]
mod tests;
