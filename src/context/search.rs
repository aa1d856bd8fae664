//! `kapi context search "<text>"`: the rules and notes that mention a
//! text, in the project and across the workspace. A rule mentions it when
//! its form to use or a form it avoids contains it, a note when its text
//! does, a correction when either wording does (case-insensitive). Only
//! what answers is listed (suggested, established, contested), in every
//! window.

use serde::Serialize;

use super::here::Item;
use super::workspace::WorkspaceRule;
use super::{ContextError, Session};
use crate::ops::Ledger;
use crate::ops::record::Subject;

/// What mentions the text.
#[derive(Debug, Default, Serialize)]
pub struct Found {
    pub text: String,
    /// The project's term rules (suggestions and contested ones included).
    pub rules: Vec<Item>,
    /// The project's notes, and corrections that state no rule.
    pub notes: Vec<Item>,
    /// Rules other registered repositories widened to the workspace, which
    /// hold here too unless a project rule speaks for the same term.
    pub workspace: Vec<WorkspaceRule>,
}

/// Search the project's log and the workspace's rules for `text`.
pub fn search(session: &Session, text: &str) -> Result<Found, ContextError> {
    let needle = text.trim();
    if needle.is_empty() {
        return Err(ContextError::Usage(
            "give the text to search for: `kapi context search \"quick cast\"`".into(),
        ));
    }
    // Rules, notes and corrections, with their states as the whole ledger
    // folds them: the decisions' view holds them all, without the usage
    // signals and check runs that make up most of a long log.
    let (ledger, _) = session.decisions_ledger()?;
    let mut found = in_ledger(&ledger, needle);
    // Another checkout of this project holds this log's own rules: they
    // are listed once, as the project's.
    found.workspace = super::workspace::rules(session)?
        .into_iter()
        .filter(|r| {
            let own = ledger
                .get(&r.id)
                .is_some_and(|o| o.project == r.project && o.subject.is_some());
            r.mentions(needle) && !own
        })
        .collect();
    session.release(ledger);
    Ok(found)
}

fn mentions(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// What in one folded log mentions `needle`.
pub fn in_ledger(ledger: &Ledger, needle: &str) -> Found {
    let mut found = Found {
        text: needle.to_owned(),
        ..Found::default()
    };
    for rule in ledger.term_rules(None, None) {
        let hit = rule
            .preferred
            .as_deref()
            .is_some_and(|p| mentions(p, needle))
            || rule.avoided.iter().any(|a| mentions(a, needle));
        if hit {
            found.rules.push(Item::of_rule(
                &rule,
                rule.id.op().and_then(|op| ledger.state(&op)),
            ));
        }
    }
    for (record, state) in ledger.iter() {
        let Some(state) = state else { continue };
        if !state.status.answers() {
            continue;
        }
        let text = match (record.subject.as_deref(), &record.correction) {
            (Some(Subject::Note { text }), _) => text.clone(),
            (None, Some(c)) if mentions(&c.from, needle) || mentions(&c.to, needle) => {
                format!("\"{}\" → \"{}\"", c.from, c.to)
            }
            _ => continue,
        };
        if !mentions(&text, needle) {
            continue;
        }
        found.notes.push(Item {
            id: crate::ops::RuleId::Op(record.op_id()),
            short: record.short().to_owned(),
            status: state.status,
            preferred: None,
            avoid: Vec::new(),
            note: Some(text),
            source: None,
            scope: state.scope.clone(),
            advisory: state.advisory,
            contested_by: state.contested_by.clone(),
            standing: state.standing_text(),
            workspace: None,
            members: Vec::new(),
            repository: None,
            signed_by: None,
        });
    }
    found
}

impl Found {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.notes.is_empty() && self.workspace.is_empty()
    }
}
