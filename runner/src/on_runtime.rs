//! One `main` per runtime, each behind the feature of the same name, and the macros
//! `#[ruststream::app]` expands into, which name the feature to enable when it is off.

use std::process::ExitCode;

use ruststream::App;

use crate::ServiceFlags;

/// Run `app` as a process on a new multi-threaded tokio runtime.
#[cfg(feature = "tokio")]
pub fn tokio<A: App>(app: impl FnOnce() -> A) -> ExitCode {
    tokio_with(app, None)
}

/// [`tokio()`], with the service's own flags.
#[cfg(feature = "tokio")]
pub fn tokio_with<A: App>(app: impl FnOnce() -> A, flags: Option<ServiceFlags>) -> ExitCode {
    let runtime = match ::tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let adapter = std::sync::Arc::new(ruststream_tokio::TokioRuntime::new(
        runtime.handle().clone(),
    ));
    launch(app, adapter, |run| runtime.block_on(run), flags)
}

/// Run `app` as a process on smol's global executor.
#[cfg(feature = "smol")]
pub fn smol<A: App>(app: impl FnOnce() -> A) -> ExitCode {
    smol_with(app, None)
}

/// [`smol()`], with the service's own flags.
#[cfg(feature = "smol")]
pub fn smol_with<A: App>(app: impl FnOnce() -> A, flags: Option<ServiceFlags>) -> ExitCode {
    let adapter = std::sync::Arc::new(ruststream_smol::SmolRuntime::global());
    launch(app, adapter, ::smol::block_on, flags)
}

/// Run `app` as a process on async-std's global runtime, whose executor runs one thread unless
/// `ASYNC_STD_THREAD_COUNT` names a count (see `ruststream_async_std::start_global_executor`).
#[cfg(feature = "async-std")]
pub fn async_std<A: App>(app: impl FnOnce() -> A) -> ExitCode {
    async_std_with(app, None)
}

/// [`async_std()`], with the service's own flags.
#[cfg(feature = "async-std")]
pub fn async_std_with<A: App>(app: impl FnOnce() -> A, flags: Option<ServiceFlags>) -> ExitCode {
    // Before anything spawns: the executor keeps the thread count it starts with.
    ruststream_async_std::start_global_executor();
    let adapter = std::sync::Arc::new(ruststream_async_std::AsyncStdRuntime::new());
    launch(app, adapter, ::async_std::task::block_on, flags)
}

/// [`crate::main`] or [`crate::main_with_flags`].
#[allow(dead_code)] // Unused only in a build with no runtime feature.
fn launch<A: App>(
    app: impl FnOnce() -> A,
    runtime: std::sync::Arc<dyn ruststream::Runtime>,
    block_on: impl FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = ExitCode>>>) -> ExitCode,
    flags: Option<ServiceFlags>,
) -> ExitCode {
    match flags {
        Some(flags) => crate::main_with_flags(app, runtime, block_on, flags),
        None => crate::main(app, runtime, block_on),
    }
}

/// What `#[ruststream::app]` writes into `main` for tokio.
#[cfg(feature = "tokio")]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_tokio {
    ($app:path) => {
        $crate::on_runtime::tokio($app)
    };
    ($app:path, $flags:ty) => {
        $crate::on_runtime::tokio_with($app, Some($crate::ServiceFlags::of::<$flags>()))
    };
}

/// What `#[ruststream::app]` writes into `main` for tokio, without the feature.
#[cfg(not(feature = "tokio"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_tokio {
    ($app:path $(, $flags:ty)?) => {
        ::core::compile_error!(
            "`#[ruststream::app]` runs the app on tokio, but `rstream-runner` was built \
             without its `tokio` feature: enable it (`rstream-runner = { version = \"0.1\", \
             features = [\"tokio\"] }`), or name the runtime you use: \
             `#[ruststream::app(runtime = \"smol\")]`"
        )
    };
}

/// What `#[ruststream::app(runtime = "smol")]` writes into `main`.
#[cfg(feature = "smol")]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_smol {
    ($app:path) => {
        $crate::on_runtime::smol($app)
    };
    ($app:path, $flags:ty) => {
        $crate::on_runtime::smol_with($app, Some($crate::ServiceFlags::of::<$flags>()))
    };
}

/// What `#[ruststream::app(runtime = "smol")]` writes into `main`, without the feature.
#[cfg(not(feature = "smol"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_smol {
    ($app:path $(, $flags:ty)?) => {
        ::core::compile_error!(
            "`#[ruststream::app(runtime = \"smol\")]` needs the `smol` feature of \
             `rstream-runner`: `rstream-runner = { version = \"0.1\", \
             default-features = false, features = [\"smol\"] }`"
        )
    };
}

/// What `#[ruststream::app(runtime = "async-std")]` writes into `main`.
#[cfg(feature = "async-std")]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_async_std {
    ($app:path) => {
        $crate::on_runtime::async_std($app)
    };
    ($app:path, $flags:ty) => {
        $crate::on_runtime::async_std_with($app, Some($crate::ServiceFlags::of::<$flags>()))
    };
}

/// What `#[ruststream::app(runtime = "async-std")]` writes into `main`, without the feature.
#[cfg(not(feature = "async-std"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_async_std {
    ($app:path $(, $flags:ty)?) => {
        ::core::compile_error!(
            "`#[ruststream::app(runtime = \"async-std\")]` needs the `async-std` feature of \
             `rstream-runner`: `rstream-runner = { version = \"0.1\", \
             default-features = false, features = [\"async-std\"] }`"
        )
    };
}
