//! One `main` per runtime, each behind the feature of the same name, and the macros
//! `#[ruststream::app]` expands into, which name the feature to enable when it is off.

use std::process::ExitCode;

use ruststream::App;

/// Run `app` as a process on a new multi-threaded tokio runtime.
#[cfg(feature = "tokio")]
pub fn tokio<A: App>(app: impl FnOnce() -> A) -> ExitCode {
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
    crate::main(app, adapter, |run| runtime.block_on(run))
}

/// Run `app` as a process on smol's global executor.
#[cfg(feature = "smol")]
pub fn smol<A: App>(app: impl FnOnce() -> A) -> ExitCode {
    let adapter = std::sync::Arc::new(ruststream_smol::SmolRuntime::global());
    crate::main(app, adapter, ::smol::block_on)
}

/// Run `app` as a process on async-std's global runtime.
#[cfg(feature = "async-std")]
pub fn async_std<A: App>(app: impl FnOnce() -> A) -> ExitCode {
    let adapter = std::sync::Arc::new(ruststream_async_std::AsyncStdRuntime::new());
    crate::main(app, adapter, ::async_std::task::block_on)
}

/// What `#[ruststream::app]` writes into `main` for tokio.
#[cfg(feature = "tokio")]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_tokio {
    ($app:path) => {
        $crate::on_runtime::tokio($app)
    };
}

/// What `#[ruststream::app]` writes into `main` for tokio, without the feature.
#[cfg(not(feature = "tokio"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_tokio {
    ($app:path) => {
        ::core::compile_error!(
            "`#[ruststream::app]` runs the app on tokio, but `ruststream-runner` was built \
             without its `tokio` feature: enable it (`ruststream-runner = { version = \"0.1\", \
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
}

/// What `#[ruststream::app(runtime = "smol")]` writes into `main`, without the feature.
#[cfg(not(feature = "smol"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_smol {
    ($app:path) => {
        ::core::compile_error!(
            "`#[ruststream::app(runtime = \"smol\")]` needs the `smol` feature of \
             `ruststream-runner`: `ruststream-runner = { version = \"0.1\", \
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
}

/// What `#[ruststream::app(runtime = "async-std")]` writes into `main`, without the feature.
#[cfg(not(feature = "async-std"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __main_on_async_std {
    ($app:path) => {
        ::core::compile_error!(
            "`#[ruststream::app(runtime = \"async-std\")]` needs the `async-std` feature of \
             `ruststream-runner`: `ruststream-runner = { version = \"0.1\", \
             default-features = false, features = [\"async-std\"] }`"
        )
    };
}
