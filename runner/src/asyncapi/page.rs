//! A readable page of a document: what `/asyncapi` serves.
//!
//! Rendered here, as plain HTML with no script, so that the page needs nothing from the
//! network and shows the same in any browser, a text one included.

use std::fmt::Write as _;

use serde_json::Value;

use super::json::{entries, text};

/// The page of `document`: its servers, channels, operations and messages, each with what
/// the document says of it.
pub fn page(document: &Value) -> String {
    let title = format!(
        "{} {}",
        text(&document["info"]["title"]),
        text(&document["info"]["version"])
    );
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{t} — AsyncAPI</title><style>{STYLE}</style></head><body>\
         <h1>{t}</h1><p>{d}</p><p class=\"meta\">AsyncAPI {v} · \
         <a href=\"/asyncapi.json\">asyncapi.json</a> · \
         <a href=\"/asyncapi.yaml\">asyncapi.yaml</a></p>",
        t = escape(&title),
        d = escape(&text(&document["info"]["description"])),
        v = escape(&text(&document["asyncapi"])),
    );
    out.push_str("<h2>Servers</h2><table><tr><th>name</th><th>protocol</th><th>host</th><th>bindings</th></tr>");
    for (name, server) in entries(&document["servers"]) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            escape(name),
            escape(&text(&server["protocol"])),
            escape(&text(&server["host"])),
            escape(&compact(&server["bindings"])),
        );
    }
    out.push_str("</table><h2>Channels</h2>");
    for (id, channel) in entries(&document["channels"]) {
        let messages: Vec<&String> = entries(&channel["messages"])
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let _ = write!(
            out,
            "<section class=\"channel\" id=\"channel-{id}\"><h3>{id}</h3>\
             <p><code>{address}</code> · {role}</p><p>{description}</p>\
             <p>messages: {messages}</p><p class=\"meta\">bindings: <code>{bindings}</code></p>\
             </section>",
            id = escape(id),
            address = escape(&text(&channel["address"])),
            role = escape(&text(&channel["x-ruststream-role"])),
            description = escape(&text(&channel["description"])),
            messages = messages
                .iter()
                .map(|m| format!("<a href=\"#message-{0}\">{0}</a>", escape(m)))
                .collect::<Vec<_>>()
                .join(", "),
            bindings = escape(&compact(&channel["bindings"])),
        );
    }
    out.push_str("<h2>Operations</h2><table><tr><th>operation</th><th>action</th><th>channel</th><th>summary</th><th>subscription</th></tr>");
    for (id, operation) in entries(&document["operations"]) {
        let channel = text(&operation["channel"]["$ref"]);
        let channel = channel.rsplit('/').next().unwrap_or_default().to_owned();
        let subscription = &operation["x-pulsar-subscription"];
        let _ = write!(
            out,
            "<tr class=\"operation\" id=\"operation-{id}\"><td>{id}</td><td>{action}</td>\
             <td><a href=\"#channel-{channel}\">{channel}</a></td><td>{summary}</td>\
             <td><code>{subscription}</code></td></tr>",
            id = escape(id),
            action = escape(&text(&operation["action"])),
            channel = escape(&channel),
            summary = escape(&text(&operation["summary"])),
            subscription = if subscription.is_null() {
                String::new()
            } else {
                escape(&compact(subscription))
            },
        );
    }
    out.push_str("</table><h2>Messages</h2>");
    for (name, message) in entries(&document["components"]["messages"]) {
        let _ = write!(
            out,
            "<section class=\"message\" id=\"message-{name}\"><h3>{name}</h3>\
             <p><code>{rust}</code> · {content}</p><p>{description}</p><pre>{payload}</pre>\
             </section>",
            name = escape(name),
            rust = escape(&text(&message["x-rust-type"])),
            content = escape(&text(&message["contentType"])),
            description = escape(&text(&message["description"])),
            payload =
                escape(&serde_json::to_string_pretty(&message["payload"]).unwrap_or_default()),
        );
    }
    if let Some(schemas) = document["components"]["schemas"].as_object() {
        out.push_str("<h2>Schemas</h2>");
        for (name, schema) in schemas {
            let _ = write!(
                out,
                "<section class=\"schema\" id=\"schema-{name}\"><h3>{name}</h3><pre>{schema}</pre></section>",
                name = escape(name),
                schema = escape(&serde_json::to_string_pretty(schema).unwrap_or_default()),
            );
        }
    }
    out.push_str("</body></html>\n");
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;\
    padding:0 1em;color:#222}table{border-collapse:collapse;width:100%}td,th{border:1px solid \
    #ccc;padding:.3em .5em;text-align:left;vertical-align:top}code,pre{font-size:.85em}\
    td code{word-break:break-all}pre{background:#f6f6f6;padding:.5em;overflow:auto}\
    section{border-left:3px solid #89a;padding-left:1em;margin:1em 0}.meta{color:#666}";

fn compact(value: &Value) -> String {
    if value.is_null() {
        String::new()
    } else {
        value.to_string()
    }
}

/// `text` safe inside HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_page_names_every_channel_and_operation_and_escapes_text() {
        let doc = json!({
            "asyncapi": "3.0.0",
            "info": { "title": "refunds", "version": "0.1.0", "description": "a <b> test" },
            "channels": { "refunds": { "address": "persistent://public/default/refunds" } },
            "operations": { "process_refund": { "action": "receive",
                "channel": { "$ref": "#/channels/refunds" } } },
        });
        let html = page(&doc);
        assert!(html.contains("<h3>refunds</h3>"));
        assert!(html.contains("id=\"operation-process_refund\""));
        assert!(html.contains("a &lt;b&gt; test"));
        assert!(!html.contains("<b>"));
    }
}
