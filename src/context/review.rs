//! `kapi context review`: a person's decisions. Drops are recorded before
//! keeps, so a keep never meets a rival the same round drops.

use std::path::PathBuf;

use serde::Serialize;

use super::{ContextError, Session};
use crate::ops::id::{OpId, resolve};
use crate::ops::policy::{Transition, person_decides};
use crate::ops::record::{ActorKind, Kind, Record};
use crate::ops::scope::check_window;
use crate::ops::{Ledger, Status};

#[derive(Debug, Clone, Default)]
pub struct ReviewRequest {
    pub keep: Vec<String>,
    pub drop: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    pub advisory: bool,
    pub note: Option<String>,
}

/// What one round of decisions recorded, and the rules files it refreshed.
#[derive(Debug, Serialize)]
pub struct Reviewed {
    pub recorded: Vec<Record>,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// Why refreshing them failed, after the change was recorded: a
    /// surface shows what was recorded, then this.
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// Record one round of decisions, then refresh the rules files.
pub fn review(session: &Session, req: ReviewRequest) -> Result<Reviewed, ContextError> {
    let recorded = decide(session, req)?;
    let (refreshed, refresh_error) = super::rulesfiles::refresh_after_change(session);
    Ok(Reviewed {
        recorded,
        refreshed,
        refresh_error,
    })
}

/// One subject awaiting a person's decision: a suggestion, or a rule or
/// note that is contested.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    pub id: String,
    pub short: String,
    pub status: Status,
    /// The subject in words: `"Quickcast", not "Quick cast"`, a note's
    /// text, or a correction `"from" → "to"`.
    pub subject: String,
    /// Who recorded it (`claude (session s1)`).
    pub actor: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contested_by: Vec<OpId>,
    /// The counts behind it, e.g. `seen in 2 sessions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<String>,
}

/// What awaits a decision, in id order: every suggested or contested
/// subject, and every established rule that drifted (its avoided forms now
/// written more often than when it came into force).
pub fn pending(ledger: &Ledger) -> Vec<Pending> {
    pending_from(ledger, None)
}

/// What awaits a decision, recorded in `session` when one is named.
pub fn pending_from(ledger: &Ledger, session: Option<&str>) -> Vec<Pending> {
    let mut out = Vec::new();
    for (record, state) in ledger.iter() {
        let Some(state) = state else {
            continue;
        };
        if session.is_some_and(|s| record.actor.session.as_deref() != Some(s)) {
            continue;
        }
        if !matches!(state.status, Status::Suggested | Status::Contested) && state.drift.is_none() {
            continue;
        }
        let subject = record
            .subject
            .as_ref()
            .map(|s| s.describe())
            .unwrap_or_else(|| {
                record
                    .correction
                    .as_ref()
                    .map(|c| format!("\"{}\" → \"{}\"", c.from, c.to))
                    .unwrap_or_default()
            });
        out.push(Pending {
            id: record.id.clone(),
            short: record.short().to_owned(),
            status: state.status,
            subject,
            actor: record.actor.label(),
            contested_by: state.contested_by.clone(),
            standing: state.standing_text(),
        });
    }
    out
}

fn decide(session: &Session, req: ReviewRequest) -> Result<Vec<Record>, ContextError> {
    if req.keep.is_empty() && req.drop.is_empty() {
        return Err(ContextError::Usage(
            "nothing to decide: name operations with --keep <id> or --drop <id>".into(),
        ));
    }
    check_window(req.valid_from.as_deref(), req.valid_to.as_deref())?;
    let ledger = session.ledger()?;
    let ids = ledger.ids();
    // Resolve and check everything before recording anything.
    let drops: Vec<&OpId> = req
        .drop
        .iter()
        .map(|p| resolve(p, &ids))
        .collect::<Result<_, _>>()?;
    let keeps: Vec<&OpId> = req
        .keep
        .iter()
        .map(|p| resolve(p, &ids))
        .collect::<Result<_, _>>()?;
    let mut keeps = keeps;
    keeps.dedup();
    let mut drops = drops;
    drops.dedup();
    if let Some(both) = keeps.iter().find(|k| drops.contains(k)) {
        return Err(ContextError::Usage(format!(
            "#{} is both kept and dropped in this round; choose one",
            both.short()
        )));
    }
    for id in &drops {
        admissible(session, &ledger, &req, id, Kind::Drop, &drops)?;
    }
    for id in &keeps {
        admissible(session, &ledger, &req, id, Kind::Keep, &drops)?;
        // The window the keep leaves: the bounds given, the others kept.
        if let Some(state) = ledger.state(id.as_str()) {
            let from = req.valid_from.as_ref().or(state.scope.valid_from.as_ref());
            let to = req.valid_to.as_ref().or(state.scope.valid_to.as_ref());
            check_window(from.map(String::as_str), to.map(String::as_str))?;
        }
    }
    let mut recorded = Vec::new();
    for (kind, id) in drops
        .iter()
        .map(|id| (Kind::Drop, id))
        .chain(keeps.iter().map(|id| (Kind::Keep, id)))
    {
        let mut record = session.record(kind);
        record.target = Some(id.to_string());
        record.note.clone_from(&req.note);
        if kind == Kind::Keep {
            record.scope.valid_from.clone_from(&req.valid_from);
            record.scope.valid_to.clone_from(&req.valid_to);
            record.advisory = req.advisory;
        }
        recorded.push(session.append(record)?);
    }
    Ok(recorded)
}

fn admissible(
    session: &Session,
    ledger: &Ledger,
    req: &ReviewRequest,
    id: &OpId,
    kind: Kind,
    drops: &[&OpId],
) -> Result<(), ContextError> {
    let target = ledger.get(id.as_str()).expect("resolved ids are held");
    person_decides(&Transition::new(session.actor(), kind, Some(target)))?;
    let short = id.short();
    let Some(state) = ledger.state(id.as_str()) else {
        return Err(ContextError::Refused(format!(
            "refusing to {} #{short}: it is a {} and states no rule or note",
            kind.as_str(),
            target.kind.as_str()
        )));
    };
    match (kind, state.status) {
        (_, Status::Reset) => Err(ContextError::Refused(format!(
            "refusing to {} #{short}: a reset set it aside; reset to before that reset to bring it back",
            kind.as_str()
        ))),
        (Kind::Drop, Status::Dropped) => Err(ContextError::Refused(format!(
            "#{short} is already dropped"
        ))),
        (Kind::Keep, Status::Contested) => {
            let rivals: Vec<&OpId> = state
                .contested_by
                .iter()
                .filter(|r| !drops.contains(r))
                .collect();
            // A person keeping a rule again after a person's correction
            // reversed it: the rule binds again, the correction stays contested.
            let reversed_by_people = state.kept
                && rivals.iter().all(|r| {
                    ledger.get(r.as_str()).is_some_and(|o| {
                        o.kind == Kind::Correct && o.actor.kind == ActorKind::Person
                    })
                });
            if rivals.is_empty() || reversed_by_people {
                return Ok(());
            }
            let names: Vec<String> = rivals.iter().map(|r| format!("#{}", r.short())).collect();
            Err(ContextError::Refused(format!(
                "refusing to keep #{short}: it is contested by {}; drop the other side in the same round (`kapi context review --drop {} --keep {short}`)",
                names.join(", "),
                rivals[0].short()
            )))
        }
        (Kind::Keep, Status::Established) if !req.changes(state) => Err(ContextError::Refused(
            format!("#{short} is already established; nothing to record"),
        )),
        _ => Ok(()),
    }
}

impl ReviewRequest {
    /// Whether a keep of an established rule would change its window or advice.
    fn changes(&self, state: &crate::ops::State) -> bool {
        self.valid_from.is_some() || self.valid_to.is_some() || self.advisory != state.advisory
    }
}
