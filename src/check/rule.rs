//! A term rule as the checker sees it: the form to use, every form to avoid
//! (already derived), and how its findings weigh.

pub(crate) use crate::ops::record::Bounds;

/// One rule handed to the matcher. The log's fold (or a `--rules` term list)
/// builds these; the checker never derives variants itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckRule {
    /// The rule's operation id (24 characters), or `terms.tsv:3` for a rule
    /// read from a term list (the file's name and the rule's line).
    pub id: String,
    /// The form to use.
    pub preferred: String,
    /// Every avoided form.
    pub avoided: Vec<String>,
    /// Suggested or contested: findings never fail and weigh zero.
    pub suggested: bool,
    /// Established but advisory: findings report and do not fail.
    pub advisory: bool,
    /// Every avoided form matches only exactly as written (case included),
    /// as Vale matches an imported substitution or `reject.txt` entry that
    /// does not ignore case. Otherwise only avoided forms differing from the
    /// preferred form in case alone match as written.
    pub exact: bool,
    /// A regular expression for what the rule avoids beyond its literal
    /// forms (an imported Vale key that lists no finite set of forms),
    /// matched between word boundaries, ignoring case unless `exact`.
    pub pattern: Option<String>,
    /// How a match's edges must stand in the text.
    pub bounds: Bounds,
    /// A Vale rule's alert level, named in its findings.
    pub level: Option<String>,
    /// Globs of the files the rule holds for; empty for every file.
    pub paths: Vec<String>,
}

impl CheckRule {
    /// Whether a finding against this rule fails the check.
    pub fn fails(&self) -> bool {
        !self.suggested && !self.advisory
    }

    /// Whether `selector` (from `<!-- kapi off: ... -->`) names this rule: its
    /// preferred form (ignoring case), its whole id, or a prefix of its id of
    /// at least four characters.
    pub fn is_named_by(&self, selector: &str) -> bool {
        let s = selector.trim();
        if s.is_empty() {
            return false;
        }
        s.to_lowercase() == self.preferred.to_lowercase()
            || s == self.id
            || (s.chars().count() >= 4 && self.id.starts_with(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> CheckRule {
        CheckRule {
            id: "0n79tw5k9s0n79tw5k9s0n79".into(),
            preferred: "Quickcast".into(),
            avoided: vec!["Quick cast".into()],
            suggested: false,
            advisory: false,
            exact: false,
            pattern: None,
            bounds: Bounds::Words,
            level: None,
            paths: Vec::new(),
        }
    }

    #[test]
    fn named_by_preferred_form_or_id_prefix() {
        let r = rule();
        assert!(r.is_named_by("Quickcast"));
        assert!(r.is_named_by(" quickcast "));
        assert!(r.is_named_by("0n79tw"));
        assert!(!r.is_named_by("0n7"));
        assert!(!r.is_named_by("Quick"));
        assert!(r.fails());
    }
}
