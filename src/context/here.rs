//! What applies at a point: the rules and notes in force there, the
//! suggestions there, and the rules held elsewhere in the project but not
//! there — the wording that stays correct, so an agent told to rename
//! something everywhere does not rename it where the rule never reached.

use serde::Serialize;

use crate::ops::record::{Record, Subject};
use crate::ops::scope::Point;
use crate::ops::{Ledger, State, Status};

/// One rule or note in an answer.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub id: String,
    pub short: String,
    pub status: Status,
    pub subject: Subject,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub point: Point,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    pub advisory: bool,
    pub contested_by: Vec<String>,
    /// The counts behind a suggestion, e.g. `seen in 2 sessions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<String>,
}

/// What applies at one point and instant.
#[derive(Debug, Default, Serialize)]
pub struct Here {
    /// Established term rules in force here.
    pub rules: Vec<Item>,
    /// Notes a person kept, in force here.
    pub notes: Vec<Item>,
    /// Suggestions and contested rules or notes here: advice, not yet established.
    pub suggestions: Vec<Item>,
    /// Established term rules held elsewhere in the project and not here.
    pub elsewhere: Vec<Item>,
}

fn item(record: &Record, state: &State, subject: &Subject) -> Item {
    let suggestion = matches!(state.status, Status::Suggested | Status::Contested);
    Item {
        id: record.id.clone(),
        short: record.short().to_owned(),
        status: state.status,
        subject: subject.clone(),
        point: state.scope.point.clone(),
        valid_from: state.scope.valid_from.clone(),
        valid_to: state.scope.valid_to.clone(),
        advisory: state.advisory,
        contested_by: state.contested_by.clone(),
        standing: (suggestion && state.standing.sessions > 0).then(|| state.standing.describe()),
    }
}

/// Fold the ledger's answer for `point` at instant `at` (Unix ms).
pub fn applies_at(ledger: &Ledger, point: &Point, at: Option<i64>) -> Here {
    let mut here = Here::default();
    for (record, state) in ledger.iter() {
        let (Some(state), Some(subject)) = (state, record.subject.as_ref()) else {
            continue;
        };
        if !state.status.answers() || !state.scope.in_force(at) {
            continue;
        }
        let covers = state.scope.covers(point);
        let is_term = matches!(subject, Subject::Term { .. });
        match (state.status, covers) {
            (Status::Established, true) if is_term => here.rules.push(item(record, state, subject)),
            (Status::Established, true) => here.notes.push(item(record, state, subject)),
            (Status::Established, false) if is_term => {
                here.elsewhere.push(item(record, state, subject))
            }
            (Status::Suggested | Status::Contested, true) => {
                here.suggestions.push(item(record, state, subject))
            }
            _ => {}
        }
    }
    here
}
