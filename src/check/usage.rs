//! Usage counts for settling suggestions: how often the prose writes each
//! rule's preferred form and its avoided forms, with the checker's own
//! boundaries, case logic, masking and switches.

use super::matcher::Matcher;
use super::prose::Masker;

/// Occurrences of one rule's forms in one text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub preferred: usize,
    pub avoided: usize,
}

/// One count per rule of `matcher.rules()`, in the same order. Build the
/// matcher with [`Matcher::for_usage`]: a checking matcher keeps only the
/// preferred forms that compete with avoided ones, so it would undercount.
pub fn count(matcher: &Matcher, text: &str, masker: impl Masker) -> Vec<Usage> {
    let mut out = vec![Usage::default(); matcher.rules().len()];
    let p = masker.prose(text);
    for hit in matcher.hits(text, &p) {
        let u = &mut out[hit.rule];
        if hit.preferred {
            u.preferred += 1;
        } else {
            u.avoided += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::TermRule;
    use crate::check::markdown::TextKind;

    #[test]
    fn counts_preferred_and_avoided_in_prose_only() {
        let rules = [TermRule {
            suggested: true,
            ..TermRule::listed("1", 1, "GitHub", &["github", "Git Hub"])
        }];
        let m = Matcher::for_usage(&rules).unwrap();
        let t = "GitHub and GITHUB, git hub, github `github` https://github.com";
        assert_eq!(
            count(&m, t, TextKind::Markdown),
            vec![Usage {
                preferred: 2,
                avoided: 2
            }]
        );
    }
}
