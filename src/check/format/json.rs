//! For tools: one stable JSON document (docs/check.md).

use serde::Serialize;

use crate::check::{Finding, Outcome, Summary, Warning};

/// The version of the document's shape; bumped only on breaking changes.
pub const VERSION: u32 = 1;

/// The document: what `--format json` prints and what a hook or a server
/// serializes.
#[derive(Serialize)]
pub struct Document<'a> {
    version: u32,
    findings: &'a [Finding],
    summary: Summary,
    warnings: &'a [Warning],
}

impl<'a> Document<'a> {
    pub fn of(outcome: &'a Outcome) -> Self {
        Document {
            version: VERSION,
            findings: &outcome.findings,
            summary: outcome.summary(),
            warnings: &outcome.warnings,
        }
    }
}

pub fn render(outcome: &Outcome) -> String {
    let doc = Document::of(outcome);
    let mut s =
        serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
