//! The frame fixer on hand-built frames, judged by pulsar-rs's own decoder.

use bytes::BytesMut;
use prost::Message as _;
use pulsar::message::proto::{
    base_command, command_lookup_topic_response, BaseCommand, CommandLookupTopicResponse,
    CommandMessage, MessageIdData, MessageMetadata,
};
use ruststream_test_brokers::{crc32c, frame_len, DeliveryLog, FrameError, FrameFixer};
use tokio_util::codec::Decoder as _;

const BRIDGE_URL: &str = "pulsar://127.0.0.1:40000";

fn be32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap().to_be_bytes()
}

fn message_command(redelivery_count: u32) -> Vec<u8> {
    BaseCommand {
        r#type: base_command::Type::Message as i32,
        message: Some(CommandMessage {
            consumer_id: 7,
            message_id: MessageIdData {
                ledger_id: 3,
                entry_id: 42,
                ..Default::default()
            },
            redelivery_count: Some(redelivery_count),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

fn metadata() -> Vec<u8> {
    MessageMetadata {
        producer_name: String::from("p"),
        sequence_id: 1,
        publish_time: 1_700_000_000_000,
        ..Default::default()
    }
    .encode_to_vec()
}

/// A MESSAGE frame as pulsar-lite sends it: no magic number, no checksum.
fn frame_without_checksum(command: &[u8], metadata: &[u8], payload: &[u8]) -> Vec<u8> {
    let total = 4 + command.len() + 4 + metadata.len() + payload.len();
    let mut frame = Vec::new();
    frame.extend_from_slice(&be32(total));
    frame.extend_from_slice(&be32(command.len()));
    frame.extend_from_slice(command);
    frame.extend_from_slice(&be32(metadata.len()));
    frame.extend_from_slice(metadata);
    frame.extend_from_slice(payload);
    frame
}

fn decode_with_pulsar_rs(frame: &[u8]) -> Result<pulsar::message::Message, String> {
    let mut buf = BytesMut::from(frame);
    match pulsar::message::Codec.decode(&mut buf) {
        Ok(Some(message)) if buf.is_empty() => Ok(message),
        Ok(Some(_)) => Err(format!("{} bytes left over", buf.len())),
        Ok(None) => Err(String::from("incomplete")),
        Err(err) => Err(err.to_string()),
    }
}

#[test]
fn crc32c_matches_the_known_check_value() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn a_payload_without_checksum_gets_magic_and_crc32c_and_pulsar_rs_accepts_it() {
    let command = message_command(0);
    let metadata = metadata();
    let payload = b"hello bridge";
    let raw = frame_without_checksum(&command, &metadata, payload);
    assert!(
        decode_with_pulsar_rs(&raw).is_err(),
        "pulsar-rs unexpectedly reads a frame without checksum; the fix may be unnecessary"
    );

    let fixer = FrameFixer::new(BRIDGE_URL, DeliveryLog::new());
    let fixed = fixer.fix(&raw).unwrap();

    assert_eq!(fixed.len(), raw.len() + 6);
    assert_eq!(frame_len(&fixed), Ok(Some(fixed.len())));
    let at = 8 + command.len();
    assert_eq!(
        &fixed[..4],
        &be32(raw.len() - 4 + 6),
        "total size grows by 6"
    );
    assert_eq!(&fixed[4..at], &raw[4..at], "command untouched");
    assert_eq!(&fixed[at..at + 2], &[0x0e, 0x01], "magic number");
    let checked = &raw[at..];
    let expected_crc = crc32c(checked);
    assert_eq!(
        &fixed[at + 2..at + 6],
        &expected_crc.to_be_bytes(),
        "checksum"
    );
    assert_eq!(
        &fixed[at + 6..],
        checked,
        "metadata size, metadata, payload untouched"
    );

    let decoded = decode_with_pulsar_rs(&fixed).expect("pulsar-rs reads the fixed frame");
    let payload_seen = decoded.payload.expect("a payload");
    assert_eq!(payload_seen.data, payload);
    assert_eq!(payload_seen.metadata.producer_name, "p");
}

#[test]
fn the_inserted_checksum_matches_a_known_vector() {
    // metadata size 0, no metadata, payload "123456789": the checksummed bytes are
    // 00 00 00 00 31 32 ... 39, whose CRC-32C is computed independently below.
    let command = message_command(0);
    let raw = frame_without_checksum(&command, &[], b"123456789");
    let fixed = FrameFixer::new(BRIDGE_URL, DeliveryLog::new())
        .fix(&raw)
        .unwrap();
    let at = 8 + command.len();
    let expected = bitwise_crc32c(b"\x00\x00\x00\x00123456789");
    assert_eq!(
        bitwise_crc32c(b"123456789"),
        0xE306_9283,
        "reference CRC is right"
    );
    assert_eq!(&fixed[at + 2..at + 6], &expected.to_be_bytes());
}

/// A slow, obviously-correct CRC-32C (reflected polynomial 0x82F63B78), independent of the
/// crate's table-driven one.
fn bitwise_crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn a_frame_that_has_its_checksum_passes_unchanged() {
    let command = message_command(0);
    let metadata = metadata();
    let raw = frame_without_checksum(&command, &metadata, b"x");
    let fixer = FrameFixer::new(BRIDGE_URL, DeliveryLog::new());
    let once = fixer.fix(&raw).unwrap();
    assert_eq!(fixer.fix(&once).unwrap(), once);
}

#[test]
fn a_lookup_response_points_at_the_bridge() {
    let command = BaseCommand {
        r#type: base_command::Type::LookupResponse as i32,
        lookup_topic_response: Some(CommandLookupTopicResponse {
            broker_service_url: Some(String::from("pulsar://127.0.0.1:6650")),
            response: Some(command_lookup_topic_response::LookupType::Connect as i32),
            request_id: 5,
            authoritative: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let mut raw = Vec::new();
    raw.extend_from_slice(&be32(4 + command.len()));
    raw.extend_from_slice(&be32(command.len()));
    raw.extend_from_slice(&command);

    let fixed = FrameFixer::new(BRIDGE_URL, DeliveryLog::new())
        .fix(&raw)
        .unwrap();
    let decoded = decode_with_pulsar_rs(&fixed).unwrap();
    let lookup = decoded.command.lookup_topic_response.unwrap();
    assert_eq!(lookup.broker_service_url.as_deref(), Some(BRIDGE_URL));
    assert_eq!(lookup.request_id, 5);
    assert_eq!(lookup.authoritative, Some(true));
}

#[test]
fn deliveries_are_logged_with_their_redelivery_count() {
    let log = DeliveryLog::new();
    let fixer = FrameFixer::new(BRIDGE_URL, log.clone());
    for count in [0, 1] {
        let raw = frame_without_checksum(&message_command(count), &metadata(), b"x");
        fixer.fix(&raw).unwrap();
    }
    assert_eq!(log.redelivery_counts(3, 42), vec![0, 1]);
    assert_eq!(log.snapshot()[0].consumer_id, 7);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let fixer = FrameFixer::new(BRIDGE_URL, DeliveryLog::new());
    let mut raw = frame_without_checksum(&message_command(0), &metadata(), b"x");
    raw[8] = 0xff; // corrupt the command's first tag
    raw[9] = 0xff;
    assert!(matches!(
        fixer.fix(&raw),
        Err(FrameError::BadCommand { .. })
    ));
    assert!(matches!(
        fixer.fix(&raw[..raw.len() - 1]),
        Err(FrameError::Truncated { .. })
    ));
}
