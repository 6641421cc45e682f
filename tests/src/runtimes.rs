//! Running one test body on every runtime.

/// Writes one `#[test]` per runtime for each named async scenario `fn name(Arc<dyn Spawn>)`:
/// modules `on_tokio` (multi-threaded), `on_async_std` and `on_smol`, each calling the same
/// body with that runtime's spawner.
#[macro_export]
macro_rules! on_every_runtime {
    ($($scenario:ident),* $(,)?) => {
        mod on_tokio {
            $(
                #[test]
                fn $scenario() {
                    let rt = ::tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("a tokio runtime");
                    let spawn = ::ruststream_tokio::TokioRuntime::new(rt.handle().clone());
                    rt.block_on(super::$scenario(::std::sync::Arc::new(spawn)));
                }
            )*
        }
        mod on_async_std {
            $(
                #[test]
                fn $scenario() {
                    ::async_std::task::block_on(super::$scenario(::std::sync::Arc::new(
                        ::ruststream_async_std::AsyncStdRuntime::new(),
                    )));
                }
            )*
        }
        mod on_smol {
            $(
                #[test]
                fn $scenario() {
                    ::smol::block_on(super::$scenario(::std::sync::Arc::new(
                        ::ruststream_smol::SmolRuntime::global(),
                    )));
                }
            )*
        }
    };
}
