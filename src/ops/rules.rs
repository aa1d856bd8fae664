//! Term rules as the readers need them: every rule that answers at a point
//! and instant, one entry per rule (an imported file contributes one per
//! line it held), with whether it binds or only advises.

use super::fold::{Ledger, Status};
use super::record::{Bounds, Scope, Subject};
use super::scope::Point;

/// One term rule that answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermRule {
    /// The operation id, or `<import id>:<n>` for the n-th rule of an imported file.
    pub id: String,
    /// The operation that states it.
    pub op: String,
    /// The form to use; `None` for a rejected word with no replacement.
    pub preferred: Option<String>,
    pub avoided: Vec<String>,
    pub status: Status,
    /// Advises only: suggested, contested, or declared a suggestion by its file.
    pub suggested: bool,
    pub advisory: bool,
    /// Every avoided form matches only as written.
    pub exact: bool,
    /// A regular expression for what the rule avoids beyond its forms.
    pub pattern: Option<String>,
    /// How a match's edges must stand in the text.
    pub bounds: Bounds,
    /// A Vale rule's alert level.
    pub level: Option<String>,
    /// Globs of the files the rule holds for; empty for every file.
    pub paths: Vec<String>,
    pub scope: Scope,
}

impl TermRule {
    /// Whether a finding of this rule fails a check.
    pub fn binds(&self) -> bool {
        !self.suggested && !self.advisory
    }
}

impl Ledger {
    /// Term rules that answer at `point` (every point when `None`) and
    /// instant `at` (Unix ms; every window when `None`), in id order.
    pub fn term_rules(&self, point: Option<&Point>, at: Option<i64>) -> Vec<TermRule> {
        let mut out = Vec::new();
        for (record, state) in self.iter() {
            let Some(state) = state else { continue };
            if !state.status.answers()
                || !state.scope.in_force(at)
                || point.is_some_and(|p| !state.scope.covers(p))
            {
                continue;
            }
            let advises = state.status != Status::Established;
            match &record.subject {
                Some(Subject::Term { preferred, avoid }) => out.push(TermRule {
                    id: record.id.clone(),
                    op: record.id.clone(),
                    preferred: Some(preferred.clone()),
                    avoided: avoid.clone(),
                    status: state.status,
                    suggested: advises,
                    advisory: state.advisory,
                    exact: false,
                    pattern: None,
                    bounds: Bounds::Words,
                    level: None,
                    paths: Vec::new(),
                    scope: state.scope.clone(),
                }),
                Some(Subject::Terms { terms }) => {
                    for (n, t) in terms.iter().enumerate() {
                        out.push(TermRule {
                            id: format!("{}:{}", record.id, n + 1),
                            op: record.id.clone(),
                            preferred: t.preferred.clone(),
                            avoided: t.avoid.clone(),
                            status: state.status,
                            suggested: advises || t.suggested,
                            advisory: state.advisory || t.advisory,
                            exact: t.exact,
                            pattern: t.pattern.clone(),
                            bounds: t.bounds,
                            level: t.level.clone(),
                            paths: t.paths.clone(),
                            scope: state.scope.clone(),
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }
}
