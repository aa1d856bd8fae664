//! What the checker asks of a term rule ([`TermRule`], the one rule type
//! the fold, the workspace and a `--rules` term list all give): the form
//! to use, every form to avoid (already derived), and how its findings
//! weigh. The checker never derives variants itself.

pub(crate) use crate::ops::TermRule;
pub(crate) use crate::ops::record::Bounds;

impl TermRule {
    /// The form to use as the checker reads it: empty for a rule with no
    /// replacement (a rejected term).
    pub(crate) fn preferred_form(&self) -> &str {
        self.preferred.as_deref().unwrap_or("")
    }

    /// Whether `selector` (from `<!-- kapi off: ... -->`) names this rule: its
    /// preferred form (ignoring case), its whole id, or a prefix of its id of
    /// at least four characters.
    pub(crate) fn is_named_by(&self, selector: &str) -> bool {
        let s = selector.trim();
        if s.is_empty() {
            return false;
        }
        if s == super::markdown::ALL_RULES {
            return true;
        }
        let id = self.id.to_string();
        s.to_lowercase() == self.preferred_form().to_lowercase()
            || s == id
            || (s.chars().count() >= 4 && id.starts_with(s))
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::RuleId;

    #[test]
    fn named_by_preferred_form_or_id_prefix() {
        let op = crate::ops::OpId::parse("0n79tw5k9s0n79tw5k9s0n79").unwrap();
        let mut r = super::TermRule::listed("t", 1, "Quickcast", &["Quick cast"]);
        r.id = RuleId::Op(op);
        assert!(r.is_named_by("Quickcast"));
        assert!(r.is_named_by(" quickcast "));
        assert!(r.is_named_by("0n79tw"));
        assert!(r.is_named_by("0n79tw5k9s0n79tw5k9s0n79"));
        assert!(!r.is_named_by("0n7"));
        assert!(!r.is_named_by("Quick"));
        assert!(r.binds());
        r.preferred = None;
        assert!(!r.is_named_by("quickcast") && !r.is_named_by(""));
    }
}
