//! The two boxed types every layer passes around.

use alloc::boxed::Box;
use core::future::Future;
use core::pin::Pin;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Any error, boxed, as startup, broker and publishing calls report them.
pub type BoxError = Box<dyn core::error::Error + Send + Sync + 'static>;
