//! What `kapi check --fix` writes in one file: for each finding of an
//! established rule that names a replacement ([`fixable`]), its matched
//! text replaced by [`Finding::fix`]. Findings are spans of prose the
//! matcher reported, so code, front matter and link targets are never
//! touched. Pure: a text and its findings in, the fixed text out; reading
//! and writing the file is the use case's (`context::fix`).

use serde::Serialize;

use super::Finding;

/// What `--fix` did to one file (the JSON document's `fixed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fixed {
    pub path: String,
    /// Findings fixed.
    pub fixes: usize,
    /// Findings `--fix` would rewrite but left as they are: each overlaps
    /// another fix, or rules ask for different forms in place of one text.
    pub left: usize,
}

/// One replacement: the bytes `start..end` of the text become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub start: usize,
    pub end: usize,
    pub with: String,
}

/// The fixes of one file, and the fixable findings left as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// In text order, never overlapping.
    pub fixes: Vec<Fix>,
    /// Fixable findings not fixed: each overlaps a fix before it, or two
    /// rules ask for different forms in place of the same text.
    pub left: usize,
}

/// Whether `--fix` rewrites a finding: it fails the check (an
/// established rule, not advisory, not a suggestion) and names what to
/// write ([`Finding::fix`]).
pub fn fixable(f: &Finding) -> bool {
    f.fails && f.fix.is_some()
}

/// The fixes for the findings of one file: leftmost first, then longest;
/// a finding that overlaps a fix taken before it is left (a second run
/// fixes it if it still stands), and where rules ask for different forms
/// in place of the same text, none is written.
pub fn plan<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Plan {
    let mut found: Vec<&Finding> = findings.into_iter().filter(|f| fixable(f)).collect();
    found.sort_by(|a, b| {
        (a.start, std::cmp::Reverse(a.end), &a.rule).cmp(&(
            b.start,
            std::cmp::Reverse(b.end),
            &b.rule,
        ))
    });
    let mut plan = Plan::default();
    // Past the last fix taken, or the last text rules disagree on.
    let mut taken_end = 0;
    let mut i = 0;
    while i < found.len() {
        let f = found[i];
        let same = found[i..]
            .iter()
            .take_while(|g| g.start == f.start && g.end == f.end)
            .count();
        let group = &found[i..i + same];
        i += same;
        if f.start < taken_end {
            plan.left += group.len();
            continue;
        }
        taken_end = f.end;
        if group.iter().any(|g| g.fix != f.fix) {
            plan.left += group.len();
            continue;
        }
        if let Some(with) = &f.fix {
            plan.fixes.push(Fix {
                start: f.start,
                end: f.end,
                with: with.clone(),
            });
            plan.left += group.len() - 1;
        }
    }
    plan
}

/// `text` with `fixes` (in text order, not overlapping, on character
/// boundaries) applied.
pub fn apply(text: &str, fixes: &[Fix]) -> String {
    let grown: usize = fixes.iter().map(|f| f.with.len()).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut at = 0;
    for f in fixes {
        debug_assert!(at <= f.start && f.start <= f.end);
        out.push_str(&text[at..f.start]);
        out.push_str(&f.with);
        at = f.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Severity;

    fn finding(start: usize, end: usize, fix: &str, fails: bool, rule: &str) -> Finding {
        Finding {
            rule: rule.into(),
            rules: vec![rule.into()],
            path: "a.md".into(),
            line: 1,
            column: start + 1,
            end_column: end + 1,
            start,
            end,
            matched: String::new(),
            preferred: fix.into(),
            fix: (!fix.is_empty()).then(|| fix.into()),
            suggested: !fails,
            fails,
            severity: if fails {
                Severity::Error
            } else {
                Severity::Note
            },
            level: None,
            message: String::new(),
            workspace: None,
            repository: None,
            decision: None,
            source_line: "".into(),
            line_offset: start,
        }
    }

    #[test]
    fn fixes_apply_in_order_and_leave_the_rest() {
        let text = "Quick cast and github, run time.";
        let found = [
            finding(0, 10, "Quickcast", true, "1"),
            finding(15, 21, "GitHub", true, "2"),
            // A suggestion is never written.
            finding(23, 31, "runtime", false, "3"),
        ];
        let plan = plan(&found);
        assert_eq!(plan.left, 0);
        assert_eq!(apply(text, &plan.fixes), "Quickcast and GitHub, run time.");
    }

    #[test]
    fn overlapping_and_disagreeing_findings_are_left() {
        // "quick cast time": 0..10 and 6..15 overlap; the leftmost wins.
        let overlap = [
            finding(6, 15, "casttime", true, "b"),
            finding(0, 10, "Quickcast", true, "a"),
        ];
        let p = plan(&overlap);
        assert_eq!(p.fixes.len(), 1);
        assert_eq!((p.fixes[0].start, p.left), (0, 1));
        // Two rules, two forms, one text: neither is written, nor what
        // overlaps it.
        let disagree = [
            finding(0, 4, "colour", true, "a"),
            finding(0, 4, "hue", true, "b"),
            finding(2, 8, "x", true, "c"),
            finding(9, 12, "y", true, "d"),
        ];
        let p = plan(&disagree);
        assert_eq!(
            p.fixes,
            [Fix {
                start: 9,
                end: 12,
                with: "y".into()
            }]
        );
        assert_eq!(p.left, 3);
        // A rule with no preferred form names no fix.
        assert_eq!(plan(&[finding(0, 4, "", true, "a")]), Plan::default());
    }
}
