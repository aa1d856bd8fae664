//! For tools: one stable JSON document (docs/check.md).

use serde::Serialize;

use crate::check::fix::Fixed;
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
    /// With `--fix`: each file that had a finding to fix, and how many
    /// were fixed; the findings are then what remains.
    #[serde(skip_serializing_if = "Option::is_none")]
    fixed: Option<Vec<Fixed>>,
}

impl<'a> Document<'a> {
    pub fn of(outcome: &'a Outcome) -> Self {
        Document {
            version: VERSION,
            findings: &outcome.findings,
            summary: outcome.summary(),
            warnings: &outcome.warnings,
            fixed: None,
        }
    }

    /// The document of a check after `--fix`, saying what was fixed.
    pub fn with_fixed(mut self, fixed: Vec<Fixed>) -> Self {
        self.fixed = Some(fixed);
        self
    }
}

pub fn render(outcome: &Outcome) -> String {
    render_document(&Document::of(outcome))
}

/// A document, pretty-printed, with a final line end.
pub fn render_document(doc: &Document<'_>) -> String {
    let mut s =
        serde_json::to_string_pretty(doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
