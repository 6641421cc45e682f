//! Which runtime family a spawner's tasks run in.

/// The async runtime whose reactor a spawner's tasks run next to.
///
/// Tasks are runtime-agnostic, but I/O is not: a broker client opens sockets that only work
/// under the reactor they were made for (tokio's sockets need a tokio runtime). A broker reads
/// the flavor of the runtime it starts on to pick a client transport that works there, so the
/// choice follows the runtime the app was started on rather than whatever happens to be
/// ambient on the current thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Flavor {
    /// tokio: tokio's sockets and timers.
    Tokio,
    /// async-std: async-io's reactor.
    AsyncStd,
    /// smol: async-io's reactor.
    Smol,
    /// Anything else; a broker picks its runtime-neutral transport, if it has one.
    Other,
}
