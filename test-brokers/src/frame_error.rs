//! What can be wrong with a frame the bridge reads from the broker.

use std::fmt;

/// A server→client frame the bridge cannot pass on.
///
/// The bridge must understand every frame it forwards (it may have to resize it), so a frame it
/// cannot parse ends that client connection; this error says which rule of Pulsar's framing was
/// broken, for the report of the test that then fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The 4-byte total size announces a frame larger than the bridge accepts.
    TooLarge {
        /// The announced size after the total-size field, in bytes.
        total_size: u64,
        /// The largest size the bridge accepts.
        limit: u64,
    },
    /// The bytes handed over are not exactly one frame, or a size field points past its end.
    Truncated {
        /// Which part of the frame did not fit.
        part: &'static str,
        /// Bytes the size fields call for.
        needed: usize,
        /// Bytes actually there.
        available: usize,
    },
    /// The command is not a `BaseCommand` that pulsar-rs's protobuf definitions can decode.
    BadCommand {
        /// prost's decoding error.
        reason: String,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { total_size, limit } => write!(
                f,
                "the broker announced a {total_size}-byte frame, over the bridge's limit of \
                 {limit} bytes; the stream is out of step or the broker sends larger messages \
                 than Pulsar's 5 MB default: publish smaller messages in live tests"
            ),
            Self::Truncated {
                part,
                needed,
                available,
            } => write!(
                f,
                "the {part} of a frame needs {needed} bytes but only {available} are there; \
                 hand FrameFixer::fix exactly one frame, cut with frame_len"
            ),
            Self::BadCommand { reason } => write!(
                f,
                "the broker sent a command pulsar-rs's PulsarApi.proto cannot decode ({reason}); \
                 pulsar-rs would reject it too, so this broker cannot be used with pulsar-rs"
            ),
        }
    }
}

impl std::error::Error for FrameError {}
