//! How many threads async-std's global executor runs.

/// The variable async-std reads its executor's thread count from; it still decides when set.
pub const THREAD_COUNT_VAR: &str = "ASYNC_STD_THREAD_COUNT";

/// The variable async-std reads its executor threads' name from.
const THREAD_NAME_VAR: &str = "ASYNC_STD_THREAD_NAME";

/// Start async-std's global executor on one thread, unless [`THREAD_COUNT_VAR`]
/// (`ASYNC_STD_THREAD_COUNT`) names a count.
///
/// Why one thread: async-std's own default is one thread per core, and on two threads every
/// wake-up between the app's driver and pulsar-rs's connection and consumer tasks crosses
/// threads. Measured on Apache Pulsar standalone, that made both a raw pulsar-rs loop and the
/// framework cost clearly more CPU per message than on tokio, and on one thread the framework
/// cost less than on tokio (`python3 scripts/bench --only=live` measures each runtime). smol's
/// global executor runs one thread by default too. A service whose handlers compute on
/// several subscriptions at once can ask for more: `ASYNC_STD_THREAD_COUNT=2`.
///
/// Call it first, before anything spawns on async-std: the executor starts on the first spawn
/// and keeps its thread count, so a later call changes nothing. `rstream-runner`'s
/// async-std entry point (`#[ruststream::app(runtime = "async-std")]`) calls it first.
pub fn start_global_executor() {
    let name = std::env::var(THREAD_NAME_VAR).unwrap_or_else(|_| "async-std/runtime".to_owned());
    async_global_executor::init_with_config(
        async_global_executor::GlobalExecutorConfig::default()
            .with_env_var(THREAD_COUNT_VAR)
            .with_min_threads(1)
            .with_thread_name_fn(move || name.clone()),
    );
}
