//! Handlers: what `#[subscriber]` turns an `async fn` into.
//!
//! The macro writes a unit struct named like the function and implements [`Handler`] for it:
//! the payload (the first parameter, `&T`) is decoded with [`Payload`], every other parameter
//! is taken with [`Extract`], then the function runs. A handler whose first parameter is a
//! slice (`&[T]`) is a batch handler (`crate::batch`): each payload is decoded, the other
//! parameters are taken once with `ExtractBatch`, and the function runs once for the batch.
//! The broker drives handlers only through [`Handler::call`] and [`Handler::call_batch`], so
//! it never needs to know their parameter lists.

mod extract;
#[allow(clippy::module_inception)]
mod handler;
mod incoming;
mod payload;
mod publisher;
mod rejection;
pub(crate) mod spare;

pub use crate::boxed::BoxFuture;
pub use crate::publish::{Publish, Publishing};
pub use extract::Extract;
pub use handler::{Described, Handler};
pub use incoming::Incoming;
pub use payload::Payload;
pub use publisher::Publisher;
pub use rejection::{DecodeError, Rejection};
