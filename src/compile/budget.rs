//! The one wire serializer and fitting a report into its byte budget.

use serde_json::{Value, json};

use super::manifest::DIGEST_PLACEHOLDER;
use crate::digest;

/// The sole wire serializer: compact JSON, sorted keys, unescaped UTF-8 and
/// exactly one trailing newline.
pub fn serialize(value: &Value) -> Vec<u8> {
    let mut out = digest::canonical(value);
    out.push(b'\n');
    out
}

/// The complete bounded refusal: `budget_too_small` when the metadata
/// cannot fit, `scope_too_large` when the hybrid graph is over its bounds.
/// It fits the minimum budget of 160 bytes (the format names the contract).
pub fn refusal(max_bytes: usize, error: &'static str) -> Value {
    let mut v = json!({
        "budget": { "max_bytes": max_bytes, "used_bytes": 0 },
        "error": error,
        "execution_authorized": false,
        "format": super::FORMAT,
        "status": "refused",
    });
    set_used_bytes(&mut v);
    v
}

/// Bytes a string's content takes once JSON-escaped (without its quotes).
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The longest prefix of `body` whose escaped length is at most `room`; it
/// never splits a UTF-8 character.
fn prefix(body: &str, room: usize) -> (&str, usize) {
    let mut used = 0;
    for (i, c) in body.char_indices() {
        let n = escaped_len(c);
        if used + n > room {
            return (&body[..i], used);
        }
        used += n;
    }
    (body, used)
}

/// Set `budget.used_bytes` to the report's real serialized length: the
/// fixed point of `length = rest + digits(length)`.
fn set_used_bytes(report: &mut Value) {
    for _ in 0..8 {
        let len = serialize(report).len();
        if report["budget"]["used_bytes"] == json!(len) {
            return;
        }
        report["budget"]["used_bytes"] = json!(len);
    }
}

/// Fill the bodies of `report["contexts"]` in selection order within
/// `max_bytes`, then set `used_bytes` and the report digest. `None` when
/// the report without bodies does not fit.
pub fn fit(mut report: Value, bodies: &[String], max_bytes: usize) -> Option<Value> {
    // Placeholders no shorter than their final values.
    report["budget"]["used_bytes"] = json!(max_bytes);
    report["budget"]["truncated_contexts"] = json!(bodies.len());
    report["manifest"]["report_sha256"] = json!(DIGEST_PLACEHOLDER);
    let base = serialize(&report).len();
    if base > max_bytes {
        return None;
    }
    let mut room = max_bytes - base;
    let mut truncated = 0;
    for (i, body) in bodies.iter().enumerate() {
        let (text, used) = prefix(body, room);
        room -= used;
        let cut = text.len() < body.len();
        truncated += usize::from(cut);
        let ctx = &mut report["contexts"][i];
        ctx["body"] = json!(text);
        ctx["content_truncated"] = json!(cut);
    }
    report["budget"]["truncated_contexts"] = json!(truncated);
    set_used_bytes(&mut report);
    let digest = digest::sha256_hex(&serialize(&report));
    report["manifest"]["report_sha256"] = json!(digest);
    // The placeholders make this hold; checking keeps it a guarantee.
    (serialize(&report).len() <= max_bytes).then_some(report)
}

/// The digest a report claims, recomputed: the serialization with
/// `manifest.report_sha256` set to the placeholder.
pub fn report_digest(report: &Value) -> String {
    let mut copy = report.clone();
    copy["manifest"]["report_sha256"] = json!(DIGEST_PLACEHOLDER);
    digest::sha256_hex(&serialize(&copy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_fits_the_minimum_budget() {
        for error in ["budget_too_small", "scope_too_large"] {
            let v = refusal(super::super::MIN_MAX_BYTES, error);
            let bytes = serialize(&v);
            assert!(
                bytes.len() <= super::super::MIN_MAX_BYTES,
                "{}",
                bytes.len()
            );
            assert_eq!(v["budget"]["used_bytes"], json!(bytes.len()));
            assert!(bytes.ends_with(b"}\n"));
        }
    }

    #[test]
    fn prefixes_never_split_characters() {
        assert_eq!(prefix("aé\"b", 2), ("a", 1));
        assert_eq!(prefix("aé\"b", 3), ("aé", 3));
        assert_eq!(prefix("aé\"b", 5), ("aé\"", 5));
        assert_eq!(prefix("\u{1}", 5), ("", 0));
    }

    #[test]
    fn fits_bodies_in_order() {
        let report = json!({
            "budget": { "max_bytes": 0, "used_bytes": 0 },
            "contexts": [{ "body": "", "content_truncated": false }, { "body": "", "content_truncated": false }],
            "manifest": { "report_sha256": "" },
        });
        let bodies = vec!["x".repeat(100), "y".repeat(100)];
        for max in [200, 230, 260, 320, 400] {
            let Some(v) = fit(report.clone(), &bodies, max) else {
                continue;
            };
            let bytes = serialize(&v);
            assert!(bytes.len() <= max);
            assert_eq!(v["budget"]["used_bytes"], json!(bytes.len()));
            assert_eq!(
                report_digest(&v),
                v["manifest"]["report_sha256"].as_str().unwrap()
            );
        }
        assert!(fit(report, &bodies, 50).is_none());
    }
}
