//! What applies at a point: the rules and notes in force there, the
//! suggestions there, and the rules held elsewhere in the project but not
//! there — the wording that stays correct, so an agent told to rename
//! something everywhere does not rename it where the rule never reached.

use std::collections::HashMap;

use serde::Serialize;

use super::{ContextError, Session};

use crate::ops::group::Groups;
use crate::ops::record::{Scope, Subject};
use crate::ops::scope::Point;
use crate::ops::{Ledger, OpId, RuleId, State, Status, TermRule};

/// One rule or note in an answer.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// The rule's id (`<import id>:<n>` for a rule of an imported file),
    /// or the note's.
    pub id: RuleId,
    pub short: String,
    pub status: Status,
    /// For a term rule: the form to use (absent for a rejected word).
    #[serde(rename = "use", skip_serializing_if = "Option::is_none")]
    pub preferred: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub avoid: Vec<String>,
    /// For a note: its text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a content-memory pair: the phrase it renders (`use` is the
    /// rendering kept for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Scope::is_empty")]
    pub scope: Scope,
    pub advisory: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contested_by: Vec<crate::ops::OpId>,
    /// The counts behind a suggestion, e.g. `seen in 2 sessions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<String>,
    /// A rule another registered repository widened to the workspace:
    /// the project that decided it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// When several operations state the rule here (two agents suggested
    /// it), every one of them, this one first: the rule is listed once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<OpId>,
    /// For a workspace rule: the checkout whose log it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<std::path::PathBuf>,
    /// Whose signed decision put it in force (`[trust]`): the principal
    /// whose signature on the keep, import or establish verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
}

impl Item {
    /// `"Quickcast", not "Quick cast", "Quick-cast"`, `avoid "utilise"`, or a note's text.
    pub fn describe(&self) -> String {
        if let Some(note) = &self.note {
            return note.clone();
        }
        if let Some(source) = &self.source {
            let target = self.preferred.as_deref().unwrap_or_default();
            return format!("\"{source}\" → \"{target}\"");
        }
        let avoided: Vec<String> = self.avoid.iter().map(|a| format!("\"{a}\"")).collect();
        match &self.preferred {
            Some(p) => format!("\"{p}\", not {}", avoided.join(", ")),
            None => format!("avoid {}", avoided.join(", ")),
        }
    }

    pub(crate) fn of_rule(rule: &TermRule, state: Option<&State>) -> Self {
        Item {
            id: rule.id.clone(),
            short: rule.id.short(),
            status: rule.status,
            preferred: rule.preferred.clone(),
            avoid: rule
                .avoided
                .iter()
                .cloned()
                .chain(rule.pattern.as_ref().map(|p| format!("/{p}/")))
                .collect(),
            note: None,
            source: None,
            scope: rule.scope.clone(),
            advisory: rule.advisory,
            contested_by: state.map(|s| s.contested_by.clone()).unwrap_or_default(),
            standing: state.and_then(standing),
            workspace: None,
            members: Vec::new(),
            repository: None,
            signed_by: None,
        }
    }
}

/// A ledger's term rules at every instant ([`Ledger::term_rules`] with no
/// point and no instant), in id order, each with its item.
#[derive(Debug)]
pub struct RuleItems {
    pub rules: Vec<TermRule>,
    items: Vec<Item>,
}

impl RuleItems {
    pub fn of(ledger: &Ledger) -> Self {
        let rules = ledger.term_rules(None, None);
        let items = rules
            .iter()
            .map(|rule| {
                let mut item = Item::of_rule(rule, rule.id.op().and_then(|op| ledger.state(&op)));
                // A pair in force reads as the pair it is.
                if let Some(Subject::Pair { source, .. }) = rule
                    .id
                    .op()
                    .and_then(|op| ledger.get(&op))
                    .and_then(|r| r.subject.as_deref())
                {
                    item.source = Some(source.clone());
                    item.avoid.clear();
                }
                item
            })
            .collect();
        Self { rules, items }
    }
}

fn standing(state: &State) -> Option<String> {
    state.standing_text()
}

/// The first operation of the group an item's rule belongs to, when
/// several operations of the log state it.
fn lead(groups: &Groups, item: &Item) -> Option<(OpId, OpId)> {
    match item.id {
        RuleId::Op(id) => groups.lead(&id).map(|lead| (lead, id)),
        _ => None,
    }
}

/// One list of an answer, each rule of a group listed once.
#[derive(Default)]
struct Listing {
    items: Vec<Item>,
    /// Where each group's item stands in `items`.
    by_lead: HashMap<OpId, usize>,
}

impl Listing {
    /// Add `item`, or name it on the item of its group already listed.
    fn add(&mut self, groups: &Groups, item: Item) {
        let Some((lead, id)) = lead(groups, &item) else {
            self.items.push(item);
            return;
        };
        match self.by_lead.get(&lead) {
            Some(&at) => {
                let first = &mut self.items[at];
                if first.members.is_empty() {
                    first.members.extend(first.id.op());
                }
                first.members.push(id);
            }
            None => {
                self.by_lead.insert(lead, self.items.len());
                self.items.push(item);
            }
        }
    }
}

/// What applies at one point and instant.
#[derive(Debug, Default, Serialize)]
pub struct Here {
    /// Established term rules in force here (binding or advisory).
    pub rules: Vec<Item>,
    /// Notes a person kept, in force here.
    pub notes: Vec<Item>,
    /// Suggestions and contested rules or notes here: advice, not yet established.
    pub suggestions: Vec<Item>,
    /// Established term rules held elsewhere in the project and not here.
    pub elsewhere: Vec<Item>,
    /// Content-memory pairs in force here: the rendering kept for a
    /// phrase (a check reports the phrase where its rendering is expected).
    pub pairs: Vec<Item>,
}

/// Fold the ledger's answer for `point` at instant `at` (Unix ms). A rule
/// several operations state ([`crate::ops::group`]) is listed once, by the
/// first that holds here, naming them all; one that holds here is not
/// also wording that stays correct here.
/// `groups` are the ledger's ([`Ledger::rule_groups`]), `listed` its term
/// rules at every instant with their items ([`RuleItems::of`]): a
/// long-running process makes both once for a ledger it keeps.
pub fn applies_at(
    ledger: &Ledger,
    groups: &Groups,
    listed: &RuleItems,
    point: &Point,
    at: Option<i64>,
) -> Here {
    let mut here = Here::default();
    let (mut rules, mut suggestions, mut elsewhere) =
        (Listing::default(), Listing::default(), Listing::default());
    let mut away = Vec::new();
    for (rule, item) in listed.rules.iter().zip(&listed.items) {
        // As `Ledger::term_rules` at `at` would list them; pairs are
        // listed below, with the pairs suggested.
        if !rule.scope.in_force(at) || item.source.is_some() {
            continue;
        }
        let op = rule.id.op();
        let covers = op
            .and_then(|op| ledger.get(&op))
            .is_some_and(|r| ledger.covers(r, &rule.scope, point));
        match (covers, rule.suggested) {
            (true, false) => rules.add(groups, item.clone()),
            (true, true) => suggestions.add(groups, item.clone()),
            (false, false) => away.push(item.clone()),
            (false, true) => {}
        }
    }
    for item in away {
        let here_too = lead(groups, &item).is_some_and(|(l, _)| rules.by_lead.contains_key(&l));
        if !here_too {
            elsewhere.add(groups, item);
        }
    }
    here.rules = rules.items;
    here.suggestions = suggestions.items;
    here.elsewhere = elsewhere.items;
    for (record, state) in ledger.iter() {
        let Some(state) = state else {
            continue;
        };
        let (preferred, note, source) = match record.subject.as_deref() {
            Some(Subject::Note { text }) => (None, Some(text.clone()), None),
            Some(Subject::Pair { source, target }) => {
                (Some(target.clone()), None, Some(source.clone()))
            }
            _ => continue,
        };
        if !state.status.answers()
            || !state.scope.in_force(at)
            || !ledger.covers(record, &state.scope, point)
        {
            continue;
        }
        let pair = source.is_some();
        let item = Item {
            id: RuleId::Op(record.op_id()),
            short: record.short().to_owned(),
            status: state.status,
            preferred,
            avoid: Vec::new(),
            note,
            source,
            scope: state.scope.clone(),
            advisory: state.advisory,
            contested_by: state.contested_by.clone(),
            standing: standing(state),
            workspace: None,
            members: Vec::new(),
            repository: None,
            signed_by: None,
        };
        match (state.status == Status::Established, pair) {
            (true, true) => here.pairs.push(item),
            (true, false) => here.notes.push(item),
            (false, _) => here.suggestions.push(item),
        }
    }
    here
}

/// The answer for one path of the work tree: `kapi context <path>`.
/// Serializes as the `--json` document.
#[derive(Debug)]
pub struct AtPath {
    /// The path relative to the work tree.
    pub path: String,
    pub point: Point,
    pub here: Here,
}

impl AtPath {
    /// The JSON document of `kapi context <path> --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let here = &self.here;
        serde_json::json!({"path": self.path, "point": self.point, "rules": here.rules, "notes": here.notes,
            "suggestions": here.suggestions, "elsewhere": here.elsewhere, "pairs": here.pairs})
    }
}

impl Serialize for AtPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// What applies at `path` (a file or folder; relative paths are taken
/// from where the session runs) now, or as the log stood at `as_of` (Unix
/// ms) with windows read at that instant.
/// The signed decision that put the rule `id` in force, and its signer:
/// the import that carried it, or the keep or establish that decided it,
/// when its signature verified.
pub fn signed_decision<'l>(ledger: &'l Ledger, id: &RuleId) -> Option<(OpId, &'l str)> {
    let decided = match id {
        RuleId::Op(op) => ledger.state(op)?.decided_by.unwrap_or(*op),
        RuleId::Imported(op, _) => *op,
        RuleId::File(..) => return None,
    };
    Some((decided, ledger.signed_by(decided.as_str())?))
}

pub fn at_path(session: &Session, path: &str, as_of: Option<u64>) -> Result<AtPath, ContextError> {
    let rel = super::work_tree_path(session, path)?;
    // A path that is not there is a mistake to name, not a place where
    // nothing applies yet.
    if std::fs::symlink_metadata(session.root.join(&rel)).is_err() {
        return Err(ContextError::Usage(format!(
            "{path} does not exist in the work tree {}; name a file or folder that does",
            session.root.display()
        )));
    }
    // A folder sits where the files in it do.
    let probe = if session.root.join(&rel).is_dir() {
        format!("{rel}/_")
    } else {
        rel.clone()
    };
    let point = super::point_of(&session.config, &probe)?;
    let (ledger, _) = session.rules_view(as_of)?;
    let at = Some(match as_of {
        Some(at) => at,
        None => session.now_ms()?,
    } as i64);
    let listed = ledger.rule_items();
    let mut here = applies_at(&ledger, ledger.groups(), listed, &point, at);
    for item in here.rules.iter_mut().chain(here.notes.iter_mut()) {
        item.signed_by = signed_decision(&ledger, &item.id).map(|(_, p)| p.to_owned());
    }
    // Rules other repositories widened to the workspace hold here too,
    // unless a rule of the project speaks for the same term.
    for rule in super::workspace::rules_at(session, at) {
        if rule.shadowed_by(&listed.rules) || !rule.scope.covers(&point) {
            continue;
        }
        let item = Item {
            id: RuleId::Op(rule.id),
            short: rule.short.clone(),
            status: rule.status,
            preferred: Some(rule.preferred.clone()),
            avoid: rule.avoid.clone(),
            note: None,
            source: None,
            scope: rule.scope.clone(),
            advisory: rule.advisory,
            contested_by: Vec::new(),
            standing: None,
            workspace: Some(rule.project.clone()),
            members: Vec::new(),
            repository: Some(rule.repository.clone()),
            signed_by: None,
        };
        if rule.status == Status::Established {
            here.rules.push(item);
        } else {
            here.suggestions.push(item);
        }
    }
    session.release(ledger);
    Ok(AtPath {
        path: rel,
        point,
        here,
    })
}
