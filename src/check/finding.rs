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
    pub message: String,
    /// The whole source line, for rendering; not part of the JSON document.
    #[serde(skip)]
    pub source_line: String,
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

/// The message for a finding of a rule.
pub fn message(preferred: &str, matched: &str, suggested: bool) -> String {
    if suggested {
        format!(
            "Suggested rule about \"{preferred}\", not yet established: write \"{preferred}\", not \"{matched}\""
        )
    } else {
        format!("use \"{preferred}\", not \"{matched}\"")
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
