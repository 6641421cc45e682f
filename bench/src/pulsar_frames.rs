//! Just enough of Pulsar's binary protocol for the counting proxy (`bin/ack_count_proxy.rs`):
//! split the byte stream into frames, read a command's type, count the message ids of a
//! `CommandAck`, and point a lookup answer at another address.
//!
//! A frame is a 4-byte big-endian size of the rest, a 4-byte big-endian size of the command,
//! the command (a protobuf `BaseCommand`), then, for messages only, a payload. Numbers from
//! `PulsarApi.proto` (the one pulsar-rs carries in `patches/pulsar/`): `BaseCommand.type` is
//! field 1, and each command's own message is the field of its type's number.
//!
//! The protobuf is walked by hand rather than decoded with generated types: the proxy reads
//! one or two fields of a few commands and copies everything else byte for byte, so it needs
//! no schema and cannot drop a field it does not know.

/// `BaseCommand.Type.ACK`, and the field of `BaseCommand` holding its `CommandAck`.
pub const ACK: u64 = 10;
/// `BaseCommand.Type.FLOW`: the consumer grants the broker more permits.
pub const FLOW: u64 = 11;
/// `BaseCommand.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES`: a negative acknowledgement (or an ack
/// timeout) asks for messages again.
pub const REDELIVER_UNACKNOWLEDGED_MESSAGES: u64 = 20;
/// `BaseCommand.Type.LOOKUP_RESPONSE`, and the field of `BaseCommand` holding its
/// `CommandLookupTopicResponse`.
pub const LOOKUP_RESPONSE: u64 = 24;
/// `CommandAck.message_id`, repeated: the ids one `CommandAck` settles.
const ACK_MESSAGE_ID: u64 = 3;
/// `CommandLookupTopicResponse.brokerServiceUrl`: where the client is to connect for the topic.
const LOOKUP_BROKER_SERVICE_URL: u64 = 1;
/// The largest frame the proxy accepts: Pulsar's default `maxMessageSize` (5 MiB) plus room
/// for the command and metadata, as the broker's own frame limit.
pub const MAX_FRAME: usize = 5 * 1024 * 1024 + 10 * 1024;

/// A protobuf field's value as it sits in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 2: a string, bytes or an embedded message.
    Bytes(&'a [u8]),
    /// Wire types 1 and 5: fixed 64 and 32 bits, kept as they are.
    Fixed,
}

/// One field of a protobuf message: its number, its value and its bytes as they appear
/// (tag included), to copy it unchanged.
#[derive(Debug, Clone, Copy)]
struct Field<'a> {
    number: u64,
    value: Value<'a>,
    raw: &'a [u8],
}

/// Read a varint at `at`, moving `at` past it.
fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Append `value` as a varint.
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The fields of a protobuf message, in order; `None` if it is malformed (or uses groups,
/// which Pulsar's protocol does not).
fn fields(message: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let start = at;
        let tag = varint(message, &mut at)?;
        let value = match tag & 7 {
            0 => Value::Varint(varint(message, &mut at)?),
            1 => {
                at = at.checked_add(8).filter(|end| *end <= message.len())?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(varint(message, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|end| *end <= message.len())?;
                let bytes = &message[at..end];
                at = end;
                Value::Bytes(bytes)
            }
            5 => {
                at = at.checked_add(4).filter(|end| *end <= message.len())?;
                Value::Fixed
            }
            _ => return None,
        };
        out.push(Field {
            number: tag >> 3,
            value,
            raw: &message[start..at],
        });
    }
    Some(out)
}

/// The embedded message in field `number` of `message`, if there is one.
fn embedded(message: &[u8], number: u64) -> Option<&[u8]> {
    fields(message)?
        .into_iter()
        .find_map(|field| match (field.number, field.value) {
            (n, Value::Bytes(bytes)) if n == number => Some(bytes),
            _ => None,
        })
}

/// The type of a `BaseCommand` (its field 1), or `None` if `command` is not one.
pub fn command_type(command: &[u8]) -> Option<u64> {
    fields(command)?
        .into_iter()
        .find_map(|field| match (field.number, field.value) {
            (1, Value::Varint(kind)) => Some(kind),
            _ => None,
        })
}

/// How many message ids the `CommandAck` in `command` (a `BaseCommand` of type [`ACK`])
/// settles: one per message for pulsar-rs today, one per batch or per group of messages for a
/// client that groups acknowledgements.
pub fn acked_ids(command: &[u8]) -> usize {
    embedded(command, ACK).and_then(fields).map_or(0, |ack| {
        ack.iter()
            .filter(|field| field.number == ACK_MESSAGE_ID)
            .count()
    })
}

/// `command` (a `BaseCommand` of type [`LOOKUP_RESPONSE`]) with the broker URL of its answer
/// replaced by `url`, and the URL it replaced; `None` if the answer names no broker URL (a
/// failed lookup) or is malformed. Every other field is copied as it is.
///
/// A client connects to the URL it is given only for the lookup, then to the address in the
/// answer: pointing that at the proxy keeps the consumer's own connection going through it.
/// (For one broker: the proxy forwards to one upstream, whatever the answer named.)
pub fn rewrite_lookup(command: &[u8], url: &str) -> Option<(Vec<u8>, String)> {
    let base = fields(command)?;
    let mut out = Vec::with_capacity(command.len() + url.len());
    let mut replaced = None;
    for field in &base {
        match (field.number, field.value) {
            (LOOKUP_RESPONSE, Value::Bytes(answer)) => {
                let mut rewritten = Vec::with_capacity(answer.len() + url.len());
                for inner in fields(answer)? {
                    match (inner.number, inner.value) {
                        (LOOKUP_BROKER_SERVICE_URL, Value::Bytes(old)) => {
                            replaced = Some(String::from_utf8_lossy(old).into_owned());
                            put_varint(&mut rewritten, (LOOKUP_BROKER_SERVICE_URL << 3) | 2);
                            put_varint(&mut rewritten, url.len() as u64);
                            rewritten.extend_from_slice(url.as_bytes());
                        }
                        _ => rewritten.extend_from_slice(inner.raw),
                    }
                }
                put_varint(&mut out, (LOOKUP_RESPONSE << 3) | 2);
                put_varint(&mut out, rewritten.len() as u64);
                out.extend_from_slice(&rewritten);
            }
            _ => out.extend_from_slice(field.raw),
        }
    }
    replaced.map(|old| (out, old))
}

/// A whole frame as it travels: the command and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `BaseCommand`.
    pub command: Vec<u8>,
    /// The rest of the frame after the command (a message's checksum, metadata and payload),
    /// empty for most commands.
    pub rest: Vec<u8>,
}

impl Frame {
    /// Read one frame from `input`; `Ok(None)` at a clean end of the stream.
    pub fn read(input: &mut impl std::io::Read) -> std::io::Result<Option<Frame>> {
        let mut size = [0u8; 4];
        match input.read_exact(&mut size) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let total = u32::from_be_bytes(size) as usize;
        let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        if !(4..=MAX_FRAME).contains(&total) {
            return Err(invalid(format!("a frame of {total} bytes")));
        }
        let mut body = vec![0u8; total];
        input.read_exact(&mut body)?;
        let command_size = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
        if command_size > total - 4 {
            return Err(invalid(format!(
                "a command of {command_size} bytes in a frame of {total}"
            )));
        }
        let rest = body.split_off(4 + command_size);
        body.drain(..4);
        Ok(Some(Frame {
            command: body,
            rest,
        }))
    }

    /// Write this frame to `output`, sizes first.
    pub fn write(&self, output: &mut impl std::io::Write) -> std::io::Result<()> {
        let command = self.command.len() as u32;
        let total = 4 + command + self.rest.len() as u32;
        output.write_all(&total.to_be_bytes())?;
        output.write_all(&command.to_be_bytes())?;
        output.write_all(&self.command)?;
        output.write_all(&self.rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-delimited field.
    fn bytes_field(number: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, (number << 3) | 2);
        put_varint(&mut out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        out
    }

    /// A varint field.
    fn varint_field(number: u64, value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, number << 3);
        put_varint(&mut out, value);
        out
    }

    /// A `MessageIdData` with ledger and entry.
    fn message_id(ledger: u64, entry: u64) -> Vec<u8> {
        [varint_field(1, ledger), varint_field(2, entry)].concat()
    }

    #[test]
    fn an_ack_with_three_ids_is_one_ack_command_of_three_ids() {
        let ack = [
            varint_field(1, 7),
            varint_field(2, 0),
            bytes_field(3, &message_id(12, 1)),
            bytes_field(3, &message_id(12, 2)),
            bytes_field(3, &message_id(300, 70_000)),
            varint_field(8, 99),
        ]
        .concat();
        let command = [varint_field(1, ACK), bytes_field(ACK, &ack)].concat();
        assert_eq!(command_type(&command), Some(ACK));
        assert_eq!(acked_ids(&command), 3);
        let flow = [
            varint_field(1, FLOW),
            bytes_field(FLOW, &varint_field(2, 1000)),
        ]
        .concat();
        assert_eq!(command_type(&flow), Some(FLOW));
        assert_eq!(acked_ids(&flow), 0);
        assert_eq!(command_type(&[0xff]), None);
    }

    #[test]
    fn a_lookup_answer_names_the_new_url_and_keeps_every_other_field() {
        let answer = [
            bytes_field(1, b"pulsar://127.0.0.1:6650"),
            varint_field(3, 1),
            varint_field(4, 42),
            varint_field(5, 1),
        ]
        .concat();
        let command = [
            varint_field(1, LOOKUP_RESPONSE),
            bytes_field(LOOKUP_RESPONSE, &answer),
        ]
        .concat();
        let (rewritten, old) = rewrite_lookup(&command, "pulsar://127.0.0.1:40123").unwrap();
        assert_eq!(old, "pulsar://127.0.0.1:6650");
        let expected_answer = [
            bytes_field(1, b"pulsar://127.0.0.1:40123"),
            varint_field(3, 1),
            varint_field(4, 42),
            varint_field(5, 1),
        ]
        .concat();
        let expected = [
            varint_field(1, LOOKUP_RESPONSE),
            bytes_field(LOOKUP_RESPONSE, &expected_answer),
        ]
        .concat();
        assert_eq!(rewritten, expected);
        // A failed lookup names no broker: nothing to rewrite.
        let failed = [
            varint_field(1, LOOKUP_RESPONSE),
            bytes_field(
                LOOKUP_RESPONSE,
                &[varint_field(3, 2), varint_field(4, 1)].concat(),
            ),
        ]
        .concat();
        assert_eq!(rewrite_lookup(&failed, "pulsar://x:1"), None);
    }

    #[test]
    fn frames_go_through_unchanged_with_their_payload() {
        let frame = Frame {
            command: [varint_field(1, 9), bytes_field(9, &varint_field(1, 3))].concat(),
            rest: vec![0x0e, 0x01, 1, 2, 3, 4, 5, 6],
        };
        let mut wire = Vec::new();
        frame.write(&mut wire).unwrap();
        frame.write(&mut wire).unwrap();
        let mut input = wire.as_slice();
        assert_eq!(Frame::read(&mut input).unwrap(), Some(frame.clone()));
        assert_eq!(Frame::read(&mut input).unwrap(), Some(frame));
        assert_eq!(Frame::read(&mut input).unwrap(), None);
        let mut bad: &[u8] = &[0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 0];
        assert!(Frame::read(&mut bad).is_err());
    }
}
