//! What a check reports: findings and the summary that weighs them.

use serde::Serialize;

/// One avoided form found in prose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id (its operation id, or `terms.tsv:3`).
    pub rule: String,
    /// Repository-relative path with forward slashes (or the path as named
    /// when checking outside a repository).
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// 1-based column just past the match, in characters.
    pub end_column: usize,
    /// Byte span of the match in the file.
    pub start: usize,
    pub end: usize,
    /// The text as written.
    pub matched: String,
    /// The form to write instead.
    pub preferred: String,
    /// The rule is a suggestion (or contested): the finding only advises.
    pub suggested: bool,
    /// The finding fails the check (an established, non-advisory rule).
    pub fails: bool,
    /// `error` (fails), `warning` (advisory) or `note` (suggested).
    pub severity: Severity,
    /// The Vale alert level of an imported Vale rule (`error`, `warning`,
    /// `suggestion`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    pub message: String,
    /// The whole source line, for rendering; not part of the JSON document.
    /// Shared by every finding on the line.
    #[serde(skip)]
    pub source_line: std::sync::Arc<str>,
    /// The match's byte offset within `source_line`.
    #[serde(skip)]
    pub line_offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Finding {
    /// The weight of this finding in the score: suggestions weigh zero.
    pub fn weight(&self) -> u64 {
        if self.suggested { 0 } else { 1 }
    }
}

/// What to do about a finding: `use "X", not "Y"`, or `avoid "Y"` for a
/// rule with no preferred form (a rejected term).
pub fn advice(preferred: &str, matched: &str) -> String {
    if preferred.is_empty() {
        format!("avoid \"{matched}\"")
    } else {
        format!("use \"{preferred}\", not \"{matched}\"")
    }
}

/// How a suggested rule is named: `Suggested rule about "X", not yet
/// established` (or `Suggested rule, not yet established` without a
/// preferred form).
pub fn suggested_note(preferred: &str) -> String {
    if preferred.is_empty() {
        "Suggested rule, not yet established".to_string()
    } else {
        format!("Suggested rule about \"{preferred}\", not yet established")
    }
}

/// The message for a finding of a rule.
pub fn message(preferred: &str, matched: &str, suggested: bool) -> String {
    if !suggested {
        return advice(preferred, matched);
    }
    let what = if preferred.is_empty() {
        format!("avoid \"{matched}\"")
    } else {
        format!("write \"{preferred}\", not \"{matched}\"")
    };
    format!("{}: {what}", suggested_note(preferred))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_without_a_preferred_form_says_avoid() {
        assert_eq!(message("", "utilize", false), "avoid \"utilize\"");
        assert_eq!(
            message("", "utilize", true),
            "Suggested rule, not yet established: avoid \"utilize\""
        );
        assert_eq!(
            message("use", "utilize", false),
            "use \"use\", not \"utilize\""
        );
    }
}

/// Totals over a check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Files checked.
    pub files: usize,
    /// All findings.
    pub findings: usize,
    /// Findings that fail the check.
    pub failing: usize,
    /// Findings that only report (suggested and advisory).
    pub reporting: usize,
    /// Sum of weights: each established finding (failing or advisory)
    /// weighs 1, a suggested one 0. Zero is clean.
    pub score: u64,
}

impl Summary {
    pub fn of(files: usize, findings: &[Finding]) -> Self {
        let failing = findings.iter().filter(|f| f.fails).count();
        Summary {
            files,
            findings: findings.len(),
            failing,
            reporting: findings.len() - failing,
            score: findings.iter().map(Finding::weight).sum(),
        }
    }
}
