//! ruststream's benchmarks: what a message costs. `scripts/bench` builds the binaries of this
//! crate in release, runs them (the in-process ones also under callgrind), and prints the
//! figures; `docs/performance.md` quotes them. Nothing here asserts a figure.
//!
//! - `inprocess`: heap allocations per in-process publish and per consume→ack, with and
//!   without JSON decode; the script reads the instructions of the same phases from callgrind.
//! - `ack_service`: an ack-only service for `run --embedded --publish`, end to end.
//! - `waits`: many concurrent `retry_after` waits on the virtual clock.
//! - `drain`: the framework alone draining a backlog of a running broker, for a profiler.
//! - `live`: a raw pulsar-rs consume+ack loop against the framework on each runtime, the Java
//!   client (`java/LiveConsumer.java`) and magnetar, on one backlog of a real broker, with the
//!   broker's CPU per message; `ack_count_proxy` counts the commands each sends the broker.
//! - `live_load`: on a real broker, a 4-partition backlog drained by 1, 2 and 4 consumer
//!   processes (`bench_worker`, a ruststream service, against the Java client), and
//!   publish→handler latency at a fixed rate (the framework, a raw pulsar-rs loop, the Java
//!   client) with the lateness of `retry_after`.
//! - `txn_forward`: consume-transform-produce in Pulsar transactions on a real broker, a
//!   transactional ruststream service (one transaction per message, and grouped) against the
//!   Java client (one per message, and per 100).

pub mod backlog;
pub mod broker_process;
pub mod count_proxy;
pub mod heap;
pub mod in_process;
pub mod java_consumer;
pub mod order;
pub mod pulsar_frames;
pub mod stamp;
pub mod worker_process;
