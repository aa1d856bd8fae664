//! Rendering a check's outcome: for people (rustc style), for tools (JSON),
//! for code scanning (SARIF 2.1.0) and for GitHub Actions (annotations);
//! and what `--fix` would write, as a unified diff.

pub mod diff;
pub mod github;
pub mod human;
pub mod json;
pub mod sarif;

#[cfg(test)]
mod tests {
    use crate::check::markdown::TextKind;
    use crate::check::{Matcher, Outcome, TermRule};

    fn rejected(suggested: bool) -> Outcome {
        let rule = TermRule {
            suggested,
            ..TermRule::listed("r", 1, "", &["utilize"])
        };
        let m = Matcher::new(&[rule]).unwrap();
        Outcome {
            findings: m.check("a.md", "We utilize it.\n", TextKind::Markdown),
            files: 1,
            ..Default::default()
        }
    }

    #[test]
    fn an_occurrence_several_rules_find_is_one_finding_carried_by_the_strongest() {
        let rule = |list: &str, preferred: &str, suggested: bool| TermRule {
            suggested,
            ..TermRule::listed(list, 1, preferred, &["Quick cast"])
        };
        // Each its own matcher, as two rules of the log are two groups.
        let mut findings = Vec::new();
        for r in [
            rule("b", "Quickcast", true),
            rule("c", "Quickcast", false),
            rule("a", "Quickcast", true),
            rule("d", "QuickCast", true),
        ] {
            let m = Matcher::new(&[r]).unwrap();
            findings.extend(m.check("a.md", "Try Quick cast.\n", TextKind::Markdown));
        }
        findings.sort_by(|x, y| x.rule.cmp(&y.rule));
        let found = crate::check::finding::one_per_occurrence(findings);
        // The rule that fails carries it; the one asking for another form
        // stays apart.
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].rule, "c:1");
        assert_eq!(found[0].rules, ["c:1", "a:1", "b:1"]);
        assert!(found[0].fails && !found[0].suggested);
        assert_eq!(found[1].rules, ["d:1"]);
        let o = Outcome {
            findings: found,
            files: 1,
            ..Default::default()
        };
        assert_eq!(o.summary().score, 1);
        let human = super::human::render(&o);
        assert!(
            human.contains("= note: 3 rules find this: c:1, a:1, b:1\n"),
            "{human}"
        );
    }

    #[test]
    fn a_rule_without_a_preferred_form_says_avoid_in_every_format() {
        let o = rejected(false);
        let human = super::human::render(&o);
        assert!(
            human.starts_with("error[term]: avoid \"utilize\"\n"),
            "{human}"
        );
        assert!(
            !human.contains("help") && !human.contains("\"\""),
            "{human}"
        );
        let json = super::json::render(&o);
        assert!(json.contains(r#""message": "avoid \"utilize\"""#), "{json}");
        let sarif = super::sarif::render(&o);
        assert!(
            sarif.contains(r#""text": "Term rule: avoid \"utilize\"""#),
            "{sarif}"
        );
        assert!(!sarif.contains(r#"\"\""#), "{sarif}");
        let github = super::github::render(&o);
        assert!(github.contains("::avoid \"utilize\"\n"), "{github}");
        let human = super::human::render(&rejected(true));
        assert!(
            human.contains("= note: Suggested rule, not yet established\n"),
            "{human}"
        );
        assert!(!human.contains("\"\""), "{human}");
    }
}
