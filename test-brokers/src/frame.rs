//! The layout of one Pulsar frame, and cutting a byte stream into frames.
//!
//! From Apache Pulsar's binary protocol specification
//! (<https://pulsar.apache.org/docs/next/developing-binary-protocol/>, "Framing"), and as
//! pulsar-rs 6.9 encodes and decodes it (`src/message.rs`, `Codec`), all integers big-endian:
//!
//! ```text
//! simple command:  [total_size: u32][command_size: u32][command: BaseCommand protobuf]
//! payload command: [total_size: u32][command_size: u32][command]
//!                  [magic: u16 = 0x0e01][checksum: u32]          <- optional in the spec
//!                  [metadata_size: u32][metadata: MessageMetadata protobuf][payload]
//! ```
//!
//! `total_size` counts everything after itself. The checksum is the CRC-32C (Castagnoli) of
//! everything after the checksum field (`metadata_size`, metadata and payload). The spec makes
//! the magic number and checksum optional; pulsar-rs's decoder reads them unconditionally, which
//! is why [`crate::FrameFixer`] inserts them. The protobuf messages are defined in Pulsar's
//! `PulsarApi.proto` (pulsar-rs ships a copy and exposes the generated types as
//! `pulsar::message::proto`).

use crate::FrameError;

/// The magic number that announces a CRC-32C checksum in a payload command.
pub(crate) const MAGIC_CRC32C: u16 = 0x0e01;

/// The largest `total_size` the bridge accepts.
///
/// Pulsar's default maximum frame is 5 MB; the margin allows brokers configured higher, while a
/// stream that is out of step (reading payload bytes as a size) is still caught at once instead
/// of making the bridge wait for gigabytes.
pub(crate) const MAX_TOTAL_SIZE: u64 = 64 * 1024 * 1024;

/// How long the first complete frame at the start of `buf` is, in bytes, or `None` while it is
/// not complete yet.
///
/// This is what a proxy needs to cut a TCP byte stream into frames without understanding them;
/// an error means the stream cannot be a Pulsar stream (see [`FrameError::TooLarge`]).
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    let Some(size) = read_u32(buf, 0) else {
        return Ok(None);
    };
    let total_size = u64::from(size);
    if total_size > MAX_TOTAL_SIZE {
        return Err(FrameError::TooLarge {
            total_size,
            limit: MAX_TOTAL_SIZE,
        });
    }
    // Lossless: total_size is at most MAX_TOTAL_SIZE, far below usize::MAX on any target.
    let len = 4 + size as usize;
    Ok((buf.len() >= len).then_some(len))
}

/// One frame cut into its command and what follows it.
pub(crate) struct FrameParts<'a> {
    /// The encoded `BaseCommand`.
    pub(crate) command: &'a [u8],
    /// Everything after the command: empty for a simple command; for a payload command the
    /// optional magic number and checksum, then metadata size, metadata and payload.
    pub(crate) after_command: &'a [u8],
}

/// Cuts exactly one frame (as [`frame_len`] delimits it) into its parts.
pub(crate) fn split(frame: &[u8]) -> Result<FrameParts<'_>, FrameError> {
    let total = read_u32(frame, 0).ok_or(FrameError::Truncated {
        part: "total size",
        needed: 4,
        available: frame.len(),
    })? as usize;
    if frame.len() != 4 + total {
        return Err(FrameError::Truncated {
            part: "frame (total size)",
            needed: 4 + total,
            available: frame.len(),
        });
    }
    let command_size = read_u32(frame, 4).ok_or(FrameError::Truncated {
        part: "command size",
        needed: 8,
        available: frame.len(),
    })? as usize;
    let command_end = 8usize.saturating_add(command_size);
    if command_end > frame.len() {
        return Err(FrameError::Truncated {
            part: "command",
            needed: command_end,
            available: frame.len(),
        });
    }
    Ok(FrameParts {
        command: &frame[8..command_end],
        after_command: &frame[command_end..],
    })
}

/// Builds a frame from an encoded command and the bytes that follow it.
pub(crate) fn assemble(command: &[u8], after_command: &[&[u8]]) -> Vec<u8> {
    let rest: usize = after_command.iter().map(|part| part.len()).sum();
    let total = 4 + command.len() + rest;
    let mut frame = Vec::with_capacity(4 + total);
    frame.extend_from_slice(&size_field(total));
    frame.extend_from_slice(&size_field(command.len()));
    frame.extend_from_slice(command);
    for part in after_command {
        frame.extend_from_slice(part);
    }
    frame
}

/// A big-endian u32 at `at`, if there are four bytes there.
pub(crate) fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let bytes = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// A big-endian u16 at `at`, if there are two bytes there.
pub(crate) fn read_u16(buf: &[u8], at: usize) -> Option<u16> {
    let bytes = buf.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([bytes[0], bytes[1]]))
}

/// A size field. Frames are bounded by [`MAX_TOTAL_SIZE`] (plus the 6 bytes the fixer may add),
/// so every size fits in a u32.
fn size_field(size: usize) -> [u8; 4] {
    u32::try_from(size).unwrap_or(u32::MAX).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_len_waits_for_the_whole_frame() {
        let frame = assemble(b"cmd", &[]);
        assert_eq!(frame_len(&frame[..3]), Ok(None));
        assert_eq!(frame_len(&frame[..frame.len() - 1]), Ok(None));
        let mut two = frame.clone();
        two.extend_from_slice(&frame);
        assert_eq!(frame_len(&two), Ok(Some(frame.len())));
    }

    #[test]
    fn frame_len_rejects_absurd_sizes() {
        assert!(matches!(
            frame_len(&[0xff, 0xff, 0xff, 0xff]),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn split_finds_command_and_rest() {
        let frame = assemble(b"cmd", &[b"abc", b"de"]);
        let parts = split(&frame).unwrap();
        assert_eq!(parts.command, b"cmd");
        assert_eq!(parts.after_command, b"abcde");
    }

    #[test]
    fn split_rejects_a_command_size_past_the_end() {
        let mut frame = assemble(b"cmd", &[]);
        frame[7] = 9;
        assert!(matches!(
            split(&frame),
            Err(FrameError::Truncated {
                part: "command",
                ..
            })
        ));
    }
}
