//! What the bridge changes in a server→client frame so that pulsar-rs can read pulsar-lite.

use prost::Message as _;
use pulsar::message::proto::{BaseCommand, CommandMessage};

use crate::checksum::crc32c;
use crate::frame::{assemble, read_u16, split, MAGIC_CRC32C};
use crate::{DeliveryLog, FrameError, ObservedDelivery};

/// Rewrites one server→client frame at a time; everything it does not need to change passes
/// through byte for byte.
///
/// Two fixes, both measured against pulsar-lite 0.2.0 and pulsar-rs 6.9.1:
///
/// - A payload command (a `MESSAGE` delivery) without the magic number `0x0e01` gets it, with
///   the CRC-32C of everything after the checksum field, and its total size grows by 6. Pulsar's
///   spec makes the checksum optional, but pulsar-rs's decoder always reads it; without it the
///   client fails with "Error decoding payload frame" and reconnects forever.
/// - A `LOOKUP_RESPONSE` names the broker to connect to; pulsar-lite names its own address, and
///   the client would then bypass the bridge. Its `brokerServiceUrl` becomes the bridge's URL.
///
/// It also records every `MESSAGE` in a [`DeliveryLog`], which is how a test sees redelivery
/// counts on the wire, independently of the client.
#[derive(Debug, Clone)]
pub struct FrameFixer {
    bridge_url: String,
    deliveries: DeliveryLog,
}

impl FrameFixer {
    /// A fixer that points lookups at `bridge_url` (`pulsar://127.0.0.1:<port>`) and records
    /// deliveries in `deliveries`.
    pub fn new(bridge_url: impl Into<String>, deliveries: DeliveryLog) -> Self {
        Self {
            bridge_url: bridge_url.into(),
            deliveries,
        }
    }

    /// The fixed form of `frame`, which must be exactly one frame (cut with
    /// [`crate::frame_len`]).
    pub fn fix(&self, frame: &[u8]) -> Result<Vec<u8>, FrameError> {
        let parts = split(frame)?;
        let mut command =
            BaseCommand::decode(parts.command).map_err(|err| FrameError::BadCommand {
                reason: err.to_string(),
            })?;

        if let Some(message) = &command.message {
            self.deliveries.record(observed(message));
        }

        let rewritten = self.point_lookup_at_bridge(&mut command);
        let needs_checksum = !parts.after_command.is_empty()
            && read_u16(parts.after_command, 0) != Some(MAGIC_CRC32C);

        if !rewritten && !needs_checksum {
            return Ok(frame.to_vec());
        }
        let encoded_command;
        let command_bytes = if rewritten {
            encoded_command = command.encode_to_vec();
            &encoded_command[..]
        } else {
            parts.command
        };
        if needs_checksum {
            // A metadata size can never start with 0x0e01 (that would be a 235 MB metadata),
            // so a payload without the magic number is unambiguous.
            let mut header = [0u8; 6];
            header[..2].copy_from_slice(&MAGIC_CRC32C.to_be_bytes());
            header[2..].copy_from_slice(&crc32c(parts.after_command).to_be_bytes());
            Ok(assemble(command_bytes, &[&header, parts.after_command]))
        } else {
            Ok(assemble(command_bytes, &[parts.after_command]))
        }
    }

    /// Rewrites the broker URL of a lookup response; whether there was one to rewrite.
    fn point_lookup_at_bridge(&self, command: &mut BaseCommand) -> bool {
        match command.lookup_topic_response.as_mut() {
            Some(lookup) if lookup.broker_service_url.is_some() => {
                lookup.broker_service_url = Some(self.bridge_url.clone());
                true
            }
            _ => false,
        }
    }
}

fn observed(message: &CommandMessage) -> ObservedDelivery {
    ObservedDelivery {
        consumer_id: message.consumer_id,
        ledger_id: message.message_id.ledger_id,
        entry_id: message.message_id.entry_id,
        redelivery_count: message.redelivery_count.unwrap_or(0),
    }
}
