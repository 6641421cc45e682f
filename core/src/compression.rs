//! How a published payload is compressed on the wire.

/// A compression codec for publishing, one of the four every Pulsar client reads (the Java,
/// C++, Python and Go clients, and ruststream's own consumer): set it per message
/// ([`Message::compression`](crate::Message::compression)), per `#[outgoing(compression =
/// "lz4")]` type, or as a broker's default for everything it publishes.
///
/// Compression pays on large or repetitive payloads (JSON of a few KiB shrinks several times)
/// and costs CPU on both sides; a batch is compressed as one block, so batching and
/// compression go well together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Compression {
    /// Not compressed: what a message without any compression setting is. Named to override a
    /// default.
    None,
    /// LZ4 (block format): fast, a moderate ratio. The Java client's usual choice.
    Lz4,
    /// zlib (deflate).
    Zlib,
    /// Zstandard: the best ratio at a moderate cost.
    Zstd,
    /// Snappy, in its raw block format (what the Java and C++ clients read and write).
    Snappy,
}

impl Compression {
    /// Every codec, in declaration order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Lz4,
        Compression::Zlib,
        Compression::Zstd,
        Compression::Snappy,
    ];

    /// The name as written in `#[outgoing(compression = "..")]`, in settings and in Pulsar's
    /// own configuration (`compressionType`, lower-cased).
    pub const fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zlib => "zlib",
            Compression::Zstd => "zstd",
            Compression::Snappy => "snappy",
        }
    }

    /// The codec named `name` (as [`Compression::name`] writes it, any case).
    pub fn from_name(name: &str) -> Option<Compression> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }
}

impl core::fmt::Display for Compression {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_any_case() {
        for codec in Compression::ALL {
            assert_eq!(Compression::from_name(codec.name()), Some(codec));
            assert_eq!(
                Compression::from_name(&codec.name().to_uppercase()),
                Some(codec)
            );
        }
        assert_eq!(Compression::from_name("gzip"), None);
    }
}
