//! A message's id, as its broker names it.

use core::fmt;
use core::str::FromStr;

/// The most numbers an id has.
const MAX_PARTS: usize = 4;

/// A message's id: up to four numbers, printed joined by `:` as the broker prints them.
///
/// For Pulsar they are `ledger:entry:partition`, plus `:index` for a message of a batch
/// (`-1` for the partition of a topic that is not partitioned), as the Java client prints
/// its ids. The same id names the message in every delivery of it, so it serves to deduplicate;
/// every publish returns one, and a handler takes one as a parameter. It is `Copy`: handing it
/// around formats nothing.
///
/// ```
/// use ruststream::MessageId;
///
/// let id: MessageId = "29:0:2:5".parse()?;
/// assert_eq!(id.parts(), [29, 0, 2, 5]);
/// assert_eq!(id.to_string(), "29:0:2:5");
/// assert_eq!(MessageId::new(&[29, 0, -1]).to_string(), "29:0:-1");
/// # Ok::<(), ruststream::message::MessageIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId {
    parts: [i64; MAX_PARTS],
    len: u8,
}

impl MessageId {
    /// The id made of `parts`, 1 to 4 numbers; more than 4 are cut to the first 4, none is
    /// read as a single 0.
    #[inline]
    pub fn new(parts: &[i64]) -> Self {
        let len = parts.len().clamp(1, MAX_PARTS);
        let mut id = MessageId {
            parts: [0; MAX_PARTS],
            len: len as u8,
        };
        id.parts[..parts.len().min(MAX_PARTS)]
            .copy_from_slice(&parts[..parts.len().min(MAX_PARTS)]);
        id
    }

    /// Its numbers, in order (Pulsar: ledger, entry, partition, and the index in a batch).
    #[inline]
    pub fn parts(&self) -> &[i64] {
        &self.parts[..usize::from(self.len)]
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.parts().iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{part}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({self})")
    }
}

/// Text that is not a message id: 1 to 4 whole numbers joined by `:`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{input}` is not a message id: write 1 to 4 whole numbers joined by `:`, as a broker \
     prints them (Pulsar: `ledger:entry:partition`, plus `:index` in a batch)"
)]
pub struct MessageIdError {
    input: alloc::string::String,
}

impl FromStr for MessageId {
    type Err = MessageIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || MessageIdError {
            input: alloc::string::String::from(text),
        };
        let mut parts = [0i64; MAX_PARTS];
        let mut len = 0;
        for part in text.split(':') {
            if len == MAX_PARTS {
                return Err(error());
            }
            parts[len] = part.parse().map_err(|_| error())?;
            len += 1;
        }
        Ok(MessageId {
            parts,
            len: len as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn an_id_prints_as_it_parses() {
        for text in ["7", "1:2:-1", "29:0:3:12"] {
            let id: MessageId = text.parse().unwrap();
            assert_eq!(id.to_string(), text);
        }
        assert_eq!(MessageId::new(&[]).to_string(), "0");
        assert_eq!(MessageId::new(&[1, 2, 3, 4, 5]).parts(), [1, 2, 3, 4]);
    }

    #[test]
    fn text_that_is_not_an_id_is_refused_with_the_form_to_use() {
        for text in ["", "a:b", "1:2:3:4:5", "1::2"] {
            let e = text.parse::<MessageId>().unwrap_err().to_string();
            assert!(e.contains("1 to 4 whole numbers"), "{text}: {e}");
        }
    }
}
