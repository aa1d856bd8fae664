//! `kapi apply`: a change set, the one write verb for rules a person
//! writes directly. Each entry of `edits` names a rule in force and says
//! what changes (its preferred or avoided forms, a pair's phrase or
//! rendering, a note's text, where or when it holds, whether it binds);
//! it is recorded as one `edit` operation naming the rule, established
//! from the start and attributed to the person who ran the command (the
//! actor the environment names: a change set has no field for one). The
//! entries of `content` rewrite files of the work tree as `apply_edits`
//! does, and record an `applied` signal (tool `apply`) for each suggestion
//! whose preferred form they write.
//!
//! All or nothing: every entry is checked (and every edit admitted by the
//! door, as a dry run) before a file is written or an operation recorded,
//! and a change set with an edit from an agent or a tool is refused by the
//! policy before anything is read ("an agent records a note instead").
//! The format is in docs/operations.md ("Change sets").

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::apply::{self, Applied, Edit};
use super::door::Recorded;
use super::{ContextError, Session};
use crate::ops::forms::avoided_forms;
use crate::ops::id::{OpId, resolve};
use crate::ops::record::{Kind, Record, Scope, Subject};
use crate::ops::scope::check_window;
use crate::ops::{Draft, Drafted, Ledger, State, Status};

/// The largest change set read, in bytes.
pub const MAX_CHANGESET_BYTES: usize = 1024 * 1024;
/// The most rule edits one change set carries.
pub const MAX_RULE_EDITS: usize = 256;
/// The change-set format this kapi reads (`"version"`, optional).
pub const CHANGESET_VERSION: u64 = 1;

/// One change set: rule edits, then content edits.
#[derive(Debug, Clone, Default)]
pub struct ChangeSet {
    pub edits: Vec<RuleEdit>,
    pub content: Vec<Edit>,
}

/// One entry of `edits`: the rule it names and what changes. A field
/// left out stays as the rule has it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleEdit {
    /// The rule in force: an operation id or an unambiguous prefix.
    pub rule: String,
    /// A term rule's form to use.
    #[serde(rename = "use", default)]
    pub preferred: Option<String>,
    /// A term rule's forms to avoid (their spacing, hyphen and
    /// capitalisation variants are derived, as `kapi context note` does).
    #[serde(default)]
    pub avoid: Option<Vec<String>>,
    /// A pair's phrase.
    #[serde(default)]
    pub source: Option<String>,
    /// A pair's rendering.
    #[serde(default)]
    pub target: Option<String>,
    /// A note's text.
    #[serde(default)]
    pub text: Option<String>,
    /// Where it holds, replacing its point (`{}`: the whole project).
    #[serde(default)]
    pub point: Option<BTreeMap<String, String>>,
    /// The first instant it holds; `null` removes the bound.
    #[serde(default, deserialize_with = "present")]
    pub valid_from: Option<Option<String>>,
    /// The instant it stops holding; `null` removes the bound.
    #[serde(default, deserialize_with = "present")]
    pub valid_to: Option<Option<String>>,
    /// Reports but never fails a check (`false`: binds again).
    #[serde(default)]
    pub advisory: Option<bool>,
    /// Why, in the person's words.
    #[serde(default)]
    pub note: Option<String>,
}

/// A field that is present, even as `null` (absent is `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// One entry of `content`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContentEntry {
    path: String,
    old: String,
    new: String,
}

/// The document as read, before each entry is parsed on its own (so an
/// error names the entry).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    version: Option<u64>,
    #[serde(default)]
    edits: Vec<Value>,
    #[serde(default)]
    content: Vec<Value>,
}

impl ChangeSet {
    /// Parse a change set (JSON), naming the entry an error is in.
    pub fn parse(bytes: &[u8]) -> Result<ChangeSet, ContextError> {
        let usage = |m: String| Err(ContextError::Usage(m));
        if bytes.len() > MAX_CHANGESET_BYTES {
            return usage(format!(
                "the change set has {} bytes; kapi reads at most {} MiB",
                bytes.len(),
                MAX_CHANGESET_BYTES >> 20
            ));
        }
        let doc: Document = match serde_json::from_slice(bytes) {
            Ok(doc) => doc,
            Err(e) => {
                return usage(format!(
                    "the change set is not a change set: {e} (docs/operations.md, \"Change sets\", gives its format)"
                ));
            }
        };
        if let Some(v) = doc.version.filter(|&v| v != CHANGESET_VERSION) {
            return usage(format!(
                "change-set version {v}: this kapi reads version {CHANGESET_VERSION}; upgrade kapi"
            ));
        }
        if doc.edits.len() > MAX_RULE_EDITS {
            return usage(format!(
                "{} rule edits; one change set carries at most {MAX_RULE_EDITS}",
                doc.edits.len()
            ));
        }
        if doc.content.len() > apply::MAX_EDITS {
            return usage(format!(
                "{} content edits; one change set carries at most {}",
                doc.content.len(),
                apply::MAX_EDITS
            ));
        }
        let mut set = ChangeSet::default();
        for (n, entry) in doc.edits.into_iter().enumerate() {
            match serde_json::from_value::<RuleEdit>(entry) {
                Ok(edit) => set.edits.push(edit),
                Err(e) => return usage(format!("edits[{n}]: {e}")),
            }
        }
        for (n, entry) in doc.content.into_iter().enumerate() {
            match serde_json::from_value::<ContentEntry>(entry) {
                Ok(c) => set.content.push(Edit {
                    path: c.path,
                    old: c.old,
                    new: c.new,
                }),
                Err(e) => return usage(format!("content[{n}]: {e}")),
            }
        }
        if set.edits.is_empty() && set.content.is_empty() {
            return usage(
                "the change set is empty: give `edits` (rules in force to change) or `content` (files to rewrite)".into(),
            );
        }
        Ok(set)
    }
}

/// What a change set recorded and wrote.
#[derive(Debug, Serialize)]
pub struct ChangeApplied {
    /// The operations recorded: each edit, and the drops of the other
    /// operations that stated an edited rule.
    pub recorded: Vec<Record>,
    /// The files written and the applied signals recorded (absent when
    /// the change set rewrote no content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Applied>,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<std::path::PathBuf>,
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// Apply a change set, all or nothing: see the module's documentation.
pub fn apply_change_set(session: &Session, set: ChangeSet) -> Result<ChangeApplied, ContextError> {
    if !set.edits.is_empty() {
        // The policy first: an agent's change set is refused before the
        // log is read or a file is opened.
        session.permits(Kind::Edit)?;
    }
    // The log is read only for rule edits (a change set of content
    // alone is `apply_edits`'s work).
    let ledger = match set.edits.is_empty() {
        true => None,
        false => Some(session.ledger()?),
    };
    let drafts = match &ledger {
        Some(ledger) => {
            let drafts = edit_drafts(session, ledger, &set.edits)?;
            // Every edit admitted before anything is written.
            session.admit_all(drafts.clone(), Some(ledger))?;
            drafts
        }
        None => Vec::new(),
    };
    let planned = match set.content.is_empty() {
        true => None,
        false => Some(apply::prepare(session, set.content, |n| {
            format!("content[{n}]")
        })?),
    };
    let written = planned.map(|p| p.write()).transpose()?;
    // The edits are decided over the whole ledger, handed over to give
    // the next reader its view.
    let recorded = match (drafts.is_empty(), ledger) {
        (true, ledger) => {
            session.release(ledger);
            None
        }
        (false, Some(ledger)) => Some(session.record_deciding(drafts, ledger)),
        (false, None) => Some(session.record(drafts, None)),
    };
    let recorded = match recorded.transpose() {
        Ok(recorded) => recorded,
        Err(e) => {
            if let Some(w) = &written {
                w.put_back();
            }
            return Err(e);
        }
    };
    let content = written.map(|w| w.signal(session));
    let Recorded {
        records,
        refreshed,
        refresh_error,
    } = recorded.unwrap_or(Recorded {
        records: Vec::new(),
        refreshed: Vec::new(),
        refresh_error: None,
    });
    Ok(ChangeApplied {
        recorded: records,
        content,
        refreshed,
        refresh_error,
    })
}

/// The operations the rule edits record, each checked against the log:
/// one `edit` per entry, and a `drop` of every other operation in force
/// that states the edited rule (a rule several sessions suggested is one
/// rule, and a person's edit of it is an edit of all of them).
fn edit_drafts(
    session: &Session,
    ledger: &Ledger,
    edits: &[RuleEdit],
) -> Result<Vec<Draft>, ContextError> {
    let ids = ledger.ids();
    let groups = ledger.rule_groups();
    let mut touched: Vec<OpId> = Vec::new();
    let mut drafts = Vec::new();
    for (n, edit) in edits.iter().enumerate() {
        let at = |e: ContextError| match e {
            ContextError::Usage(m) => ContextError::Usage(format!("edits[{n}]: {m}")),
            ContextError::Refused(m) => ContextError::Refused(format!("edits[{n}]: {m}")),
            other => ContextError::Usage(format!("edits[{n}]: {other}")),
        };
        let id = *resolve(&edit.rule, &ids).map_err(|e| at(e.into()))?;
        let members = groups.of(&id);
        if let Some(again) = members.iter().find(|m| touched.contains(m)) {
            return Err(at(ContextError::Usage(format!(
                "#{} is edited twice in this change set (#{} states the same rule); give one entry per rule",
                id.short(),
                again.short()
            ))));
        }
        touched.extend(&members);
        let (draft, others) = edit_draft(session, ledger, id, edit).map_err(at)?;
        drafts.push(draft);
        for other in members.into_iter().filter(|m| *m != id) {
            if ledger
                .state(&other)
                .is_some_and(|s| s.status == Status::Established)
            {
                drafts.push(
                    Draft::from(Drafted::Drop { target: other }).noting(Some(others.clone())),
                );
            }
        }
    }
    Ok(drafts)
}

/// The edit of the rule `id` an entry asks for, and the note the drops
/// of the rule's other operations carry.
fn edit_draft(
    session: &Session,
    ledger: &Ledger,
    id: OpId,
    edit: &RuleEdit,
) -> Result<(Draft, String), ContextError> {
    let short = id.short();
    let record = ledger.get(&id).ok_or_else(|| {
        ContextError::Refused(format!("#{short} is not an operation this log holds"))
    })?;
    let state = ledger.state(&id).ok_or_else(|| {
        ContextError::Refused(format!(
            "#{short} is a {} and states no rule, note or pair to edit",
            record.kind.as_str()
        ))
    })?;
    in_force(ledger, id, state)?;
    let subject = edited_subject(record, edit)?;
    let scope = edited_scope(session, state, edit)?;
    let advisory = edit.advisory.unwrap_or(state.advisory);
    if Some(&subject) == record.subject.as_deref()
        && scope == state.scope
        && advisory == state.advisory
    {
        return Err(ContextError::Usage(format!(
            "it changes nothing in #{short}; say what changes (`use`, `avoid`, `point`, `valid_from`, `valid_to`, `advisory`, or a pair's `source`/`target`, a note's `text`)"
        )));
    }
    let draft = Draft::from(Drafted::Edit {
        target: Some(id),
        subject,
        scope,
        advisory,
    })
    .noting(edit.note.clone().filter(|n| !n.trim().is_empty()));
    Ok((draft, format!("replaced by a person's edit of #{short}")))
}

/// An edit names a rule in force: established, and not contested.
fn in_force(ledger: &Ledger, id: OpId, state: &State) -> Result<(), ContextError> {
    let short = id.short();
    let edited_by = state
        .decided_by
        .filter(|by| ledger.get(by).is_some_and(|r| r.kind == Kind::Edit));
    match state.status {
        Status::Dropped if edited_by.is_some() => {
            let by = edited_by.expect("an edit").short().to_owned();
            Err(ContextError::Refused(format!(
                "#{short} was replaced by the edit #{by}, which states the rule in force now; edit #{by} instead"
            )))
        }
        Status::Established => Ok(()),
        Status::Contested => {
            let rivals: Vec<String> = state
                .contested_by
                .iter()
                .map(|r| format!("#{}", r.short()))
                .collect();
            Err(ContextError::Refused(format!(
                "#{short} is contested by {}; choose a side first (`kapi context review --choose {short}`), then edit it",
                rivals.join(", ")
            )))
        }
        Status::Suggested => Err(ContextError::Refused(format!(
            "#{short} is a suggestion, not a rule in force; keep it with other forms in one round (`kapi context review --keep {short} --replace-use <form>`)"
        ))),
        status => Err(ContextError::Refused(format!(
            "#{short} is {}, not a rule in force; there is nothing to edit",
            status.as_str()
        ))),
    }
}

/// The subject the edit leaves: only the fields of the subject's own kind.
fn edited_subject(record: &Record, edit: &RuleEdit) -> Result<Subject, ContextError> {
    let short = record.short();
    let refuse = |what: &str, takes: &str| {
        Err(ContextError::Usage(format!(
            "#{short} is {what}: an edit of it takes {takes}"
        )))
    };
    let term_fields = edit.preferred.is_some() || edit.avoid.is_some();
    let pair_fields = edit.source.is_some() || edit.target.is_some();
    let note_fields = edit.text.is_some();
    match record.subject.as_deref() {
        Some(Subject::Term { preferred, avoid }) => {
            if pair_fields || note_fields {
                return refuse(
                    "a term rule",
                    "`use` and `avoid`, not `source`, `target` or `text`",
                );
            }
            Ok(edited_term(preferred, avoid, edit)?)
        }
        Some(Subject::Pair { source, target }) => {
            if term_fields || note_fields {
                return refuse(
                    "a pair",
                    "`source` and `target`, not `use`, `avoid` or `text`",
                );
            }
            let source = edit.source.as_deref().unwrap_or(source);
            let target = edit.target.as_deref().unwrap_or(target);
            super::note::pair(source, target)
        }
        Some(Subject::Note { text }) => {
            if term_fields || pair_fields {
                return refuse("a note", "`text`, not `use`, `avoid`, `source` or `target`");
            }
            let text = edit.text.as_deref().unwrap_or(text).trim();
            if text.is_empty() {
                return Err(ContextError::Usage("the note's `text` is empty".into()));
            }
            Ok(Subject::Note {
                text: text.to_owned(),
            })
        }
        Some(Subject::Terms { .. }) => Err(ContextError::Refused(format!(
            "#{short} imported a file's rules, which change in the file: edit it and run `kapi store import`"
        ))),
        None => Err(ContextError::Refused(format!(
            "#{short} is a correction that states no rule; there is nothing to edit"
        ))),
    }
}

/// A term rule's forms after an edit: the forms given, with their
/// variants derived; a new form to use alone keeps the forms avoided that
/// it is not.
pub(crate) fn edited_term(
    preferred: &str,
    avoid: &[String],
    edit: &RuleEdit,
) -> Result<Subject, ContextError> {
    let new = edit
        .preferred
        .as_deref()
        .map(super::note::normalize)
        .unwrap_or_else(|| preferred.to_owned());
    let avoid = match &edit.avoid {
        Some(given) => {
            if given.iter().all(|f| f.trim().is_empty()) {
                return Err(ContextError::Usage(
                    "`avoid` is empty: a term rule avoids at least one form".into(),
                ));
            }
            avoided_forms(&new, given)?
        }
        None if new != preferred => {
            // The old form to use becomes a form to avoid, unless it is
            // the new one's spelling in another case only.
            let mut given: Vec<String> = vec![preferred.to_owned()];
            given.extend(avoid.iter().cloned());
            avoided_forms(&new, &given)?
        }
        None => avoid.to_vec(),
    };
    if avoid.is_empty() {
        return Err(ContextError::Usage(format!(
            "\"{new}\" would avoid nothing: name the forms it avoids (`avoid`)"
        )));
    }
    Ok(Subject::Term {
        preferred: new,
        avoid,
    })
}

/// Where and when the rule holds after an edit, and whether the point
/// names legal values of the project's typed axes.
fn edited_scope(session: &Session, state: &State, edit: &RuleEdit) -> Result<Scope, ContextError> {
    let mut scope = state.scope.clone();
    if let Some(point) = &edit.point {
        for (axis, value) in point {
            if axis.trim().is_empty() || value.trim().is_empty() {
                return Err(ContextError::Usage(format!(
                    "`point` {axis:?}={value:?}: an axis and its value are not empty"
                )));
            }
            if let Some(typed) = session.space.axis(axis)
                && !typed.legal(value)
            {
                return Err(ContextError::Usage(format!(
                    "`point` {axis}={value}: `{value}` is not a value of the {} axis {axis} in kapi.toml (expected {})",
                    typed.kind(),
                    typed.expects()
                )));
            }
        }
        scope.point = point.clone();
    }
    if let Some(from) = &edit.valid_from {
        scope.valid_from = from.clone();
    }
    if let Some(to) = &edit.valid_to {
        scope.valid_to = to.clone();
    }
    check_window(scope.valid_from.as_deref(), scope.valid_to.as_deref())?;
    Ok(scope)
}
