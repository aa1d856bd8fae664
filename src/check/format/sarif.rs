//! SARIF 2.1.0, as GitHub code scanning accepts it.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

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

fn fingerprint(f: &Finding) -> String {
    let mut h = Sha256::new();
    for part in [
        f.rule.as_str(),
        f.path.as_str(),
        f.matched.as_str(),
        f.source_line.trim(),
    ] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
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
    let results: Vec<Value> = outcome
        .findings
        .iter()
        .map(|f| {
            let fp = fingerprint(f);
            let n = seen.entry(fp.clone()).or_insert(0);
            *n += 1;
            json!({
                "ruleId": f.rule,
                "ruleIndex": index[f.rule.as_str()],
                "level": level(f.severity),
                "message": { "text": f.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": f.path },
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endLine": f.line,
                            "endColumn": f.end_column,
                        }
                    }
                }],
                "partialFingerprints": { "kapiFinding/v1": format!("{fp}:{n}") },
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
