//! SARIF 2.1.0, as GitHub code scanning accepts it.

use std::collections::{BTreeMap, HashMap};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use crate::check::{Finding, Outcome, Severity};

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const INFORMATION_URI: &str = "https://crates.io/crates/git-kapi";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// The first 16 bytes (32 hex digits) of the SHA-256 of the rule, path,
/// matched text and trimmed line, each ended by a NUL.
fn fingerprint(f: &Finding) -> String {
    let mut h = crate::digest::Running::default();
    for part in [
        f.rule.as_str(),
        f.path.as_str(),
        f.matched.as_str(),
        f.source_line.trim(),
    ] {
        h.add(part.as_bytes());
        h.add(&[0u8]);
    }
    let mut hex = h.finish();
    hex.truncate(32);
    hex
}

/// What a path segment (RFC 3986 `segment`, made of `pchar`) must
/// percent-encode: everything but the unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`), the sub-delimiters (`! $ & ' ( ) * + , ; =`),
/// `:` and `@`. Non-ASCII bytes are always encoded (as UTF-8).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b':')
    .remove(b'@');

/// The first segment of a relative reference (`segment-nz-nc`): a `:` there
/// would read as a scheme, so it is encoded too.
const FIRST_SEGMENT: &AsciiSet = &SEGMENT.add(b':');

/// A relative path as a URI reference (RFC 3986 `path-noscheme`): each
/// segment percent-encoded, `/` between segments.
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let set = if i == 0 { FIRST_SEGMENT } else { SEGMENT };
        out.extend(utf8_percent_encode(segment, set));
    }
    out
}

/// `Term rule: write "X"`, or `Term rule: avoid "Y"` for a rule with no
/// preferred form (named by the form its first finding matched).
fn short_description(what: &str, f: &Finding) -> String {
    if f.preferred.is_empty() {
        format!("{what}: avoid \"{}\"", f.matched)
    } else {
        format!("{what}: write \"{}\"", f.preferred)
    }
}

pub fn render(outcome: &Outcome) -> String {
    // One rule entry per rule with findings, in order of first appearance.
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rules: Vec<Value> = Vec::new();
    for f in &outcome.findings {
        if index.contains_key(f.rule.as_str()) {
            continue;
        }
        index.insert(&f.rule, rules.len());
        let what = if f.suggested {
            "Suggested rule"
        } else {
            "Term rule"
        };
        rules.push(json!({
            "id": f.rule,
            "name": "term",
            "shortDescription": { "text": short_description(what, f) },
            "defaultConfiguration": { "level": level(f.severity) },
            "properties": { "tags": ["terminology"] },
        }));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    // Findings on one line share its text: each distinct (line, rule,
    // match) is hashed once, so many findings on a long line stay linear.
    let mut hashed: HashMap<(*const u8, &str, &str, &str), String> = HashMap::new();
    let results: Vec<Value> = outcome
        .findings
        .iter()
        .map(|f| {
            let key = (
                f.source_line.as_ptr(),
                f.rule.as_str(),
                f.path.as_str(),
                f.matched.as_str(),
            );
            let fp = hashed.entry(key).or_insert_with(|| fingerprint(f)).clone();
            let n = seen.entry(fp.clone()).or_insert(0);
            *n += 1;
            json!({
                "ruleId": f.rule,
                "ruleIndex": index[f.rule.as_str()],
                "level": level(f.severity),
                "message": { "text": f.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri(&f.path) },
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endLine": f.line,
                            "endColumn": f.end_column,
                        }
                    }
                }],
                "partialFingerprints": { "kapiFinding/v1": format!("{fp}:{n}") },
                // Every rule behind the occurrence, `ruleId` first.
                "properties": { "rules": f.rules },
            })
        })
        .collect();
    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "kapi",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::{Finding, Severity, fingerprint, uri};

    #[test]
    fn a_fingerprint_is_the_first_half_of_a_sha256_of_its_parts() {
        let f = Finding {
            rule: "terms.tsv:3".into(),
            rules: vec!["terms.tsv:3".into()],
            path: "docs/a.md".into(),
            line: 1,
            column: 6,
            end_column: 16,
            start: 5,
            end: 15,
            matched: "Quick cast".into(),
            preferred: "Quickcast".into(),
            fix: Some("Quickcast".into()),
            suggested: false,
            fails: true,
            severity: Severity::Error,
            level: None,
            message: String::new(),
            workspace: None,
            repository: None,
            decision: None,
            source_line: "Open Quick cast here  ".into(),
            line_offset: 5,
        };
        // The bytes the fingerprint hashes, pinned: a fingerprint that
        // changes makes code scanning see every finding as new.
        let bytes = b"terms.tsv:3\0docs/a.md\0Quick cast\0Open Quick cast here\0";
        let whole = crate::digest::sha256_hex(bytes);
        assert_eq!(fingerprint(&f), whole[..32]);
    }

    #[test]
    fn uris_are_percent_encoded_per_segment() {
        assert_eq!(uri("docs/a.md"), "docs/a.md");
        assert_eq!(uri("my docs/50% off#1.md"), "my%20docs/50%25%20off%231.md");
        assert_eq!(uri("a?b[c]/d:e/é.md"), "a%3Fb%5Bc%5D/d:e/%C3%A9.md");
        assert_eq!(uri("c:x.md"), "c%3Ax.md");
        // Every sub-delimiter, `:` (past the first segment) and `@` stay.
        assert_eq!(uri("d/!$&'()*+,;=:@-._~"), "d/!$&'()*+,;=:@-._~");
    }

    #[test]
    fn uris_encode_spaces_fragments_queries_percents_and_non_ascii() {
        assert_eq!(
            uri("notes/a b#c?d%e/ü 中.md"),
            "notes/a%20b%23c%3Fd%25e/%C3%BC%20%E4%B8%AD.md"
        );
        assert_eq!(uri("x\\y\"<>^`{|}.md"), "x%5Cy%22%3C%3E%5E%60%7B%7C%7D.md");
    }
}
