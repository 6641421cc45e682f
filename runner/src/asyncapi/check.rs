//! `asyncapi --check FILE`: what changed between a committed document and the service now
//! that would break the service's producers or consumers.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use super::json::{entries, text};

/// A change that breaks a contract others rely on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakingChange {
    /// A channel of the committed document is gone.
    ChannelRemoved {
        /// Its id.
        channel: String,
        /// Its address.
        address: String,
    },
    /// A channel's address changed.
    AddressChanged {
        /// Its id.
        channel: String,
        /// The committed address.
        was: String,
        /// The address now.
        now: String,
    },
    /// An operation of the committed document is gone.
    OperationRemoved {
        /// Its id.
        operation: String,
    },
    /// An operation now receives where it sent, or the reverse.
    ActionChanged {
        /// Its id.
        operation: String,
        /// The committed action.
        was: String,
        /// The action now.
        now: String,
    },
    /// A subscription now has another type, which changes who gets which message.
    SubscriptionTypeChanged {
        /// The operation that reads through it.
        operation: String,
        /// The subscription's name.
        subscription: String,
        /// The committed type.
        was: String,
        /// The type now.
        now: String,
    },
    /// A message is no longer on a channel.
    MessageRemoved {
        /// The channel.
        channel: String,
        /// The message.
        message: String,
    },
    /// A payload field is gone.
    FieldRemoved {
        /// The message.
        message: String,
        /// The field, with the path to it (`Refund.card.last4`).
        field: String,
    },
    /// A payload field that was optional is now required.
    FieldMadeRequired {
        /// The message.
        message: String,
        /// The field, with the path to it.
        field: String,
    },
    /// A payload field's type changed.
    FieldTypeChanged {
        /// The message.
        message: String,
        /// The field, with the path to it.
        field: String,
        /// The committed type.
        was: String,
        /// The type now.
        now: String,
    },
}

impl fmt::Display for BreakingChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakingChange::ChannelRemoved { channel, address } => write!(
                f,
                "channel `{channel}` ({address}) was removed: what others publish there is no \
                 longer read, or what they read is no longer written"
            ),
            BreakingChange::AddressChanged { channel, was, now } => {
                write!(f, "channel `{channel}` moved from {was} to {now}")
            }
            BreakingChange::OperationRemoved { operation } => {
                write!(f, "operation `{operation}` was removed")
            }
            BreakingChange::ActionChanged {
                operation,
                was,
                now,
            } => {
                write!(f, "operation `{operation}` changed from {was} to {now}")
            }
            BreakingChange::SubscriptionTypeChanged {
                operation,
                subscription,
                was,
                now,
            } => write!(
                f,
                "operation `{operation}`: subscription `{subscription}` changed type from {was} \
                 to {now} (instances of the old version cannot share it with the new one)"
            ),
            BreakingChange::MessageRemoved { channel, message } => {
                write!(
                    f,
                    "channel `{channel}` no longer carries message `{message}`"
                )
            }
            BreakingChange::FieldRemoved { message, field } => write!(
                f,
                "message `{message}`: field `{field}` was removed (readers that need it break)"
            ),
            BreakingChange::FieldMadeRequired { message, field } => write!(
                f,
                "message `{message}`: field `{field}` is now required (writers that leave it \
                 out break)"
            ),
            BreakingChange::FieldTypeChanged {
                message,
                field,
                was,
                now,
            } => write!(
                f,
                "message `{message}`: field `{field}` changed type from {was} to {now}"
            ),
        }
    }
}

/// Every breaking change from the committed document `was` to the service's document `now`,
/// in document order. Additions (a channel, an operation, an optional field) break nothing.
pub fn breaking_changes(was: &Value, now: &Value) -> Vec<BreakingChange> {
    let mut changes = Vec::new();
    for (id, old) in entries(&was["channels"]) {
        let Some(new) = now["channels"].get(id) else {
            changes.push(BreakingChange::ChannelRemoved {
                channel: id.clone(),
                address: text(&old["address"]),
            });
            continue;
        };
        if old["address"] != new["address"] {
            changes.push(BreakingChange::AddressChanged {
                channel: id.clone(),
                was: text(&old["address"]),
                now: text(&new["address"]),
            });
        }
        for (message, _) in entries(&old["messages"]) {
            if new["messages"].get(message).is_none() {
                changes.push(BreakingChange::MessageRemoved {
                    channel: id.clone(),
                    message: message.clone(),
                });
            }
        }
    }
    for (id, old) in entries(&was["operations"]) {
        let Some(new) = now["operations"].get(id) else {
            changes.push(BreakingChange::OperationRemoved {
                operation: id.clone(),
            });
            continue;
        };
        if old["action"] != new["action"] {
            changes.push(BreakingChange::ActionChanged {
                operation: id.clone(),
                was: text(&old["action"]),
                now: text(&new["action"]),
            });
        }
        let (old_sub, new_sub) = (&old["x-pulsar-subscription"], &new["x-pulsar-subscription"]);
        if !old_sub.is_null() && !new_sub.is_null() && old_sub["type"] != new_sub["type"] {
            changes.push(BreakingChange::SubscriptionTypeChanged {
                operation: id.clone(),
                subscription: text(&new_sub["name"]),
                was: text(&old_sub["type"]),
                now: text(&new_sub["type"]),
            });
        }
    }
    for (name, old) in entries(&was["components"]["messages"]) {
        let new = &now["components"]["messages"][name];
        if new.is_null() {
            // Gone from every channel too: reported there.
            continue;
        }
        let mut walk = Walk {
            was,
            now,
            message: name,
            changes: &mut changes,
            seen: BTreeSet::new(),
        };
        walk.compare(&old["payload"], &new["payload"], name);
    }
    changes
}

/// Comparing two payload schemas, with each document's `$ref`s resolved in that document.
struct Walk<'a> {
    was: &'a Value,
    now: &'a Value,
    message: &'a str,
    changes: &'a mut Vec<BreakingChange>,
    /// The references followed on this path (recursive types end here).
    seen: BTreeSet<(String, String)>,
}

impl Walk<'_> {
    fn compare(&mut self, old: &Value, new: &Value, path: &str) {
        let (old, old_ref) = resolve(self.was, old);
        let (new, new_ref) = resolve(self.now, new);
        if old_ref.is_some() || new_ref.is_some() {
            let key = (old_ref.unwrap_or_default(), new_ref.unwrap_or_default());
            if !self.seen.insert(key) {
                return;
            }
        }
        if let (Some(was), Some(now)) = (type_of(old), type_of(new)) {
            if was != now {
                self.changes.push(BreakingChange::FieldTypeChanged {
                    message: self.message.to_owned(),
                    field: path.to_owned(),
                    was,
                    now,
                });
                return;
            }
        }
        let required = |schema: &Value| -> BTreeSet<String> {
            schema["required"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (old_required, new_required) = (required(old), required(new));
        for (field, old_field) in entries(&old["properties"]) {
            let field_path = format!("{path}.{field}");
            match new["properties"].get(field) {
                None => self.changes.push(BreakingChange::FieldRemoved {
                    message: self.message.to_owned(),
                    field: field_path,
                }),
                Some(new_field) => {
                    if new_required.contains(field) && !old_required.contains(field) {
                        self.changes.push(BreakingChange::FieldMadeRequired {
                            message: self.message.to_owned(),
                            field: field_path.clone(),
                        });
                    }
                    self.compare(old_field, new_field, &field_path);
                }
            }
        }
        // A field that is new and required at once breaks writers too.
        for field in new_required.difference(&old_required) {
            if old["properties"].get(field).is_none() && new["properties"].get(field).is_some() {
                self.changes.push(BreakingChange::FieldMadeRequired {
                    message: self.message.to_owned(),
                    field: format!("{path}.{field}"),
                });
            }
        }
        if !old["items"].is_null() && !new["items"].is_null() {
            self.compare(&old["items"], &new["items"], &format!("{path}[]"));
        }
    }
}

/// `schema`, or what its `$ref` points to in `document` (and the reference).
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> (&'a Value, Option<String>) {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let target = reference
                .strip_prefix('#')
                .and_then(|p| document.pointer(p))
                .unwrap_or(&Value::Null);
            (target, Some(reference.to_owned()))
        }
        None => (schema, None),
    }
}

/// A schema's `type`, as text (`"integer"`, `["string","null"]`), when it has one.
fn type_of(schema: &Value) -> Option<String> {
    match &schema["type"] {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(subscription_type: &str, refund: Value) -> Value {
        json!({
            "channels": {
                "refunds": { "address": "persistent://public/default/refunds",
                             "messages": { "Refund": { "$ref": "#/components/messages/Refund" } } },
                "refunds-dlq": { "address": "persistent://public/default/refunds-dlq",
                                 "messages": { "Refund": { "$ref": "#/components/messages/Refund" } } }
            },
            "operations": {
                "process_refund": { "action": "receive",
                    "x-pulsar-subscription": { "name": "refunds", "type": subscription_type } },
                "process_refund_dead_letter": { "action": "send" }
            },
            "components": { "messages": { "Refund": { "payload": refund } },
                            "schemas": { "Card": { "type": "object",
                                "properties": { "last4": { "type": "string" }, "brand": { "type": "string" } } } } }
        })
    }

    fn refund() -> Value {
        json!({ "type": "object", "required": ["id"],
                "properties": { "id": { "type": "integer" }, "amount_cents": { "type": "integer" },
                                "card": { "$ref": "#/components/schemas/Card" } } })
    }

    #[test]
    fn an_unchanged_service_breaks_nothing() {
        assert_eq!(
            breaking_changes(&doc("Shared", refund()), &doc("Shared", refund())),
            []
        );
    }

    #[test]
    fn additions_break_nothing() {
        let mut now = doc("Shared", refund());
        now["channels"]["audit"] = json!({ "address": "persistent://public/default/audit" });
        now["components"]["messages"]["Refund"]["payload"]["properties"]["note"] =
            json!({ "type": "string" });
        assert_eq!(breaking_changes(&doc("Shared", refund()), &now), []);
    }

    #[test]
    fn a_removed_field_and_a_changed_subscription_type_are_named() {
        let mut payload = refund();
        payload["properties"]
            .as_object_mut()
            .unwrap()
            .remove("amount_cents");
        let changes = breaking_changes(&doc("Shared", refund()), &doc("Failover", payload));
        let text: Vec<String> = changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            changes,
            [
                BreakingChange::SubscriptionTypeChanged {
                    operation: "process_refund".into(),
                    subscription: "refunds".into(),
                    was: "Shared".into(),
                    now: "Failover".into()
                },
                BreakingChange::FieldRemoved {
                    message: "Refund".into(),
                    field: "Refund.amount_cents".into()
                },
            ],
            "{text:#?}"
        );
        assert!(
            text[1].contains("field `Refund.amount_cents` was removed"),
            "{}",
            text[1]
        );
    }

    #[test]
    fn nested_fields_are_compared_through_references() {
        let mut now = doc("Shared", refund());
        now["components"]["schemas"]["Card"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove("brand");
        now["components"]["schemas"]["Card"]["required"] = json!(["last4"]);
        let changes = breaking_changes(&doc("Shared", refund()), &now);
        assert_eq!(
            changes,
            [
                BreakingChange::FieldRemoved {
                    message: "Refund".into(),
                    field: "Refund.card.brand".into()
                },
                BreakingChange::FieldMadeRequired {
                    message: "Refund".into(),
                    field: "Refund.card.last4".into()
                },
            ]
        );
    }

    #[test]
    fn removed_channels_operations_and_type_changes_are_named() {
        let mut now = doc("Shared", refund());
        now["channels"]
            .as_object_mut()
            .unwrap()
            .remove("refunds-dlq");
        now["operations"]
            .as_object_mut()
            .unwrap()
            .remove("process_refund_dead_letter");
        now["components"]["messages"]["Refund"]["payload"]["properties"]["id"] =
            json!({ "type": "string" });
        let text: Vec<String> = breaking_changes(&doc("Shared", refund()), &now)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(text.len(), 3, "{text:#?}");
        assert!(text[0].starts_with("channel `refunds-dlq`"));
        assert!(text[1].starts_with("operation `process_refund_dead_letter` was removed"));
        assert!(text[2].contains("field `Refund.id` changed type from integer to string"));
    }
}
