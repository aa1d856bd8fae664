//! What a check reports: findings and the summary that weighs them.

use serde::Serialize;

/// One avoided form found in prose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id (its operation id, or `terms.tsv:3`): the strongest
    /// of the rules behind the occurrence (see [`one_per_occurrence`]).
    pub rule: String,
    /// Every rule behind the occurrence, `rule` first: rules that find the
    /// same text and ask for the same form (two agents that suggested one
    /// rule, a term list and a Vale style saying the same) report it once.
    pub rules: Vec<String>,
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
    /// What `kapi check --fix` writes in place of `matched`: the preferred
    /// form in the case the match allows ([`super::case::fitted`]). `None`
    /// when the rule has no preferred form, or the match is no form the
    /// rule lists (a pattern rule's match, which may hold more than the
    /// term). Not part of the JSON document.
    #[serde(skip)]
    pub fix: Option<String>,
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
    /// A rule another repository of this machine shares with the
    /// workspace: the project that decided it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// For a workspace rule: the checkout whose log it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<std::path::PathBuf>,
    /// The signed decision that put the rule in force (`[trust]`): the
    /// keep, import or establish, and whose signature on it verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<SignedDecision>,
    /// The whole source line, for rendering; not part of the JSON document.
    /// Shared by every finding on the line.
    #[serde(skip)]
    pub source_line: std::sync::Arc<str>,
    /// The match's byte offset within `source_line`.
    #[serde(skip)]
    pub line_offset: usize,
}

/// A signed decision behind a rule: the operation and its signer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedDecision {
    pub id: String,
    pub signed_by: String,
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

    /// Which rule carries an occurrence several rules find: one that fails,
    /// then an advisory one, then a suggestion; then the earliest id.
    fn strength(&self) -> (u8, &str) {
        let rank = match self.severity {
            Severity::Error => 0,
            Severity::Warning => 1,
            Severity::Note => 2,
        };
        (rank, &self.rule)
    }

    /// The Vale check (style file) behind a finding of an imported Vale
    /// rule: the operation that imported the file (the id's `<op>` of
    /// `<op>:<n>`). `None` for any other rule.
    fn vale_check(&self) -> Option<&str> {
        self.level.as_ref()?;
        self.rule.rsplit_once(':').map(|(op, _)| op)
    }

    /// Take in another rule's finding of the same occurrence.
    fn absorb(&mut self, other: Finding) {
        let mut rules: Vec<String> = std::mem::take(&mut self.rules);
        rules.extend(other.rules.iter().cloned());
        // Both ask for the same form: a rule that lists the text gives
        // the fix when the carrier's pattern only matched it.
        let mut fix = self.fix.take();
        if other.strength() < self.strength() {
            *self = other;
            fix = self.fix.take().or(fix);
        } else {
            fix = fix.or(other.fix);
        }
        self.fix = fix;
        rules.sort_unstable();
        rules.dedup();
        if let Some(at) = rules.iter().position(|r| *r == self.rule) {
            let carrier = rules.remove(at);
            rules.insert(0, carrier);
        }
        self.rules = rules;
    }
}

/// One finding per occurrence: the findings of several rules at the same
/// span of one file that ask for the same form are one finding, carried by
/// the strongest rule (it fails if any of them fails) and naming every
/// rule in `rules`. Findings that ask for different forms stay apart: each
/// says something else. So do the findings of two Vale checks (two style
/// files): Vale reports an alert per check at a place (it drops an alert
/// only when one of the same check, line and start is in), so a project
/// enabling two styles that both swap a term sees it twice, in Vale and
/// here; a rule of kapi's own joins one of them. `findings` are sorted by
/// path and offset; so is the result.
pub fn one_per_occurrence(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    // Per finding of `out`, the Vale check among its rules.
    let mut checks: Vec<Option<String>> = Vec::with_capacity(findings.len());
    // Where the findings at the current (path, start) begin in `out`.
    let mut run = 0;
    for f in findings {
        let same_start = out
            .get(run)
            .is_some_and(|g| g.start == f.start && g.path == f.path);
        if !same_start {
            run = out.len();
        }
        let check = f.vale_check().map(str::to_owned);
        let joins = out[run..].iter().zip(&checks[run..]).position(|(g, c)| {
            g.end == f.end
                && g.preferred == f.preferred
                && (c.is_none() || check.is_none() || *c == check)
        });
        match joins {
            Some(i) => {
                out[run + i].absorb(f);
                if checks[run + i].is_none() {
                    checks[run + i] = check;
                }
            }
            None => {
                out.push(f);
                checks.push(check);
            }
        }
    }
    out
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
