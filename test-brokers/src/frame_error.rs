//! What can be wrong with a frame the bridge reads from the broker.

/// A server→client frame the bridge cannot pass on.
///
/// The bridge must understand every frame it forwards (it may have to resize it), so a frame it
/// cannot parse ends that client connection; this error says which rule of Pulsar's framing was
/// broken, for the report of the test that then fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The 4-byte total size announces a frame larger than the bridge accepts.
    #[error(
        "the broker announced a {total_size}-byte frame, over the bridge's limit of \
         {limit} bytes; the stream is out of step or the broker sends larger messages \
         than Pulsar's 5 MB default: publish smaller messages in live tests"
    )]
    TooLarge {
        /// The announced size after the total-size field, in bytes.
        total_size: u64,
        /// The largest size the bridge accepts.
        limit: u64,
    },
    /// The bytes handed over are not exactly one frame, or a size field points past its end.
    #[error(
        "the {part} of a frame needs {needed} bytes but only {available} are there; \
         hand FrameFixer::fix exactly one frame, cut with frame_len"
    )]
    Truncated {
        /// Which part of the frame did not fit.
        part: &'static str,
        /// Bytes the size fields call for.
        needed: usize,
        /// Bytes actually there.
        available: usize,
    },
    /// The command is not a `BaseCommand` that pulsar-rs's protobuf definitions can decode.
    #[error(
        "the broker sent a command pulsar-rs's PulsarApi.proto cannot decode ({reason}); \
         pulsar-rs would reject it too, so this broker cannot be used with pulsar-rs"
    )]
    BadCommand {
        /// prost's decoding error.
        reason: String,
    },
}
