//! `kapi context review`: one round of a person's decisions, and the digest
//! they are taken from.
//!
//! A round ([`ReviewRequest`]) may choose a side of a disagreement, drop,
//! keep (one by one, or everything a session suggested), and widen; it is
//! checked whole before anything is recorded, then recorded in a fixed
//! order: the choice (the rivals dropped, the chosen side kept), the drops,
//! the keeps, then the widenings. So a keep never meets a rival the same
//! round drops. The terminal walk and the flags both call [`review`].

use std::path::PathBuf;

use serde::Serialize;

use super::{ContextError, Session};
use crate::ops::id::{OpId, resolve};
use crate::ops::policy::{Transition, person_decides};
use crate::ops::record::{ActorKind, Kind, Record, Scope, Subject};
use crate::ops::scope::check_window;
use crate::ops::widen::{WidenError, WidenTo, widenable, widened};
use crate::ops::{Ledger, State, Status};

/// One round of decisions. Ids are operation ids or unambiguous prefixes.
#[derive(Debug, Clone, Default)]
pub struct ReviewRequest {
    /// Keep these suggestions; `all` with `session` keeps everything the
    /// session suggested that nothing contests.
    pub keep: Vec<String>,
    /// Drop these suggestions or rules in force.
    pub drop: Vec<String>,
    /// Settle a disagreement for this side: its rivals are dropped and it
    /// is kept.
    pub choose: Option<String>,
    /// The agent session `--keep all` keeps the suggestions of.
    pub session: Option<String>,
    /// Widen these rules already in force (with `widen_to`).
    pub widen: Vec<String>,
    /// Where the keeps, the chosen side and `widen` then hold.
    pub widen_to: Option<WidenTo>,
    /// The keeps bind as advice only.
    pub advisory: bool,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    /// Why, in the person's words, recorded on every operation of the round.
    pub note: Option<String>,
}

/// What one round of decisions recorded, and the rules files it refreshed.
#[derive(Debug, Serialize)]
pub struct Reviewed {
    pub recorded: Vec<Record>,
    /// Suggestions `--keep all` left for later because something contests
    /// them, each with the other side.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<Left>,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// Why refreshing them failed, after the change was recorded: a
    /// surface shows what was recorded, then this.
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// A contested suggestion a session's `--keep all` did not keep.
#[derive(Debug, Clone, Serialize)]
pub struct Left {
    pub id: String,
    pub short: String,
    pub subject: String,
    pub contested_by: Vec<OpId>,
}

/// Record one round of decisions, then refresh the rules files.
pub fn review(session: &Session, req: ReviewRequest) -> Result<Reviewed, ContextError> {
    let (recorded, left) = decide(session, &req)?;
    let (refreshed, refresh_error) = super::rulesfiles::refresh_after_change(session);
    Ok(Reviewed {
        recorded,
        left,
        refreshed,
        refresh_error,
    })
}

/// One subject of the digest: a suggestion or contested subject awaiting
/// a decision, or a rule or note in force, with what a person may do.
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
    /// Where and when it holds now.
    #[serde(skip_serializing_if = "Scope::is_empty")]
    pub scope: Scope,
    /// It waits for a person: a suggestion, a contested subject, or a
    /// rule in force whose avoided forms are written more than they were.
    pub awaiting: bool,
    /// A person may keep it (a suggestion, or a contested side by choosing).
    pub keepable: bool,
    /// A person may drop it: a suggestion or a rule in force.
    pub droppable: bool,
    /// A rule or note in force that can apply more widely
    /// (`--widen <id> --widen-to <where>`).
    pub widenable: bool,
}

/// The digest: every subject awaiting a decision and every rule or note in
/// force, in id order.
pub fn pending(ledger: &Ledger) -> Vec<Pending> {
    pending_from(ledger, None)
}

/// The digest of what `session` recorded, when one is named.
pub fn pending_from(ledger: &Ledger, session: Option<&str>) -> Vec<Pending> {
    let mut out = Vec::new();
    for (record, state) in ledger.iter() {
        let Some(state) = state else {
            continue;
        };
        if session.is_some_and(|s| record.actor.session.as_deref() != Some(s)) {
            continue;
        }
        if !state.status.answers() || plain_correction_at_rest(record, state) {
            continue;
        }
        let in_force = state.status == Status::Established;
        out.push(Pending {
            id: record.id.clone(),
            short: record.short().to_owned(),
            status: state.status,
            subject: describe(record),
            actor: record.actor.label(),
            contested_by: state.contested_by.clone(),
            standing: state.standing_text(),
            scope: state.scope.clone(),
            awaiting: !in_force || state.drift.is_some(),
            keepable: !in_force,
            droppable: true,
            widenable: in_force && widens_at_all(record, state),
        });
    }
    out
}

/// A correction that implies no rule and that nothing contests: a change
/// of wording at one place, which no check reads, so there is nothing to
/// decide about it. (Contested, it is a side a person may choose.)
fn plain_correction_at_rest(record: &Record, state: &State) -> bool {
    record.kind == Kind::Correct && record.subject.is_none() && state.status == Status::Suggested
}

fn is_note(record: &Record) -> bool {
    matches!(record.subject, Some(Subject::Note { .. }))
}

/// A term rule or a note whose scope some widening would change.
fn widens_at_all(record: &Record, state: &State) -> bool {
    matches!(
        record.subject,
        Some(Subject::Term { .. } | Subject::Note { .. })
    ) && widenable(&state.scope, is_note(record))
}

/// A subject in words.
pub(crate) fn describe(record: &Record) -> String {
    record
        .subject
        .as_ref()
        .map(|s| s.describe())
        .unwrap_or_else(|| {
            record
                .correction
                .as_ref()
                .map(|c| format!("\"{}\" → \"{}\"", c.from, c.to))
                .unwrap_or_default()
        })
}

/// The operations one round records, in order, before any is appended.
struct Round<'l> {
    ledger: &'l Ledger,
    /// (kind, target, scope of a widen)
    steps: Vec<(Kind, OpId, Option<Scope>)>,
}

impl Round<'_> {
    fn has(&self, kind: Kind, id: &OpId) -> bool {
        self.steps.iter().any(|(k, t, _)| *k == kind && t == id)
    }

    fn dropped(&self) -> Vec<&OpId> {
        self.steps
            .iter()
            .filter(|(k, _, _)| *k == Kind::Drop)
            .map(|(_, t, _)| t)
            .collect()
    }

    /// Add `kind` of `id` once; the same subject kept and dropped in one
    /// round is refused.
    fn push(&mut self, kind: Kind, id: &OpId) -> Result<bool, ContextError> {
        let other = if kind == Kind::Keep {
            Kind::Drop
        } else {
            Kind::Keep
        };
        if self.has(other, id) {
            return Err(ContextError::Usage(format!(
                "#{} is both kept and dropped in this round; choose one",
                id.short()
            )));
        }
        if self.has(kind, id) {
            return Ok(false);
        }
        self.steps.push((kind, *id, None));
        Ok(true)
    }

    fn state(&self, id: &OpId) -> Option<&State> {
        self.ledger.state(id.as_str())
    }
}

fn decide(
    session: &Session,
    req: &ReviewRequest,
) -> Result<(Vec<Record>, Vec<Left>), ContextError> {
    let keep_all = req.keep.iter().any(|k| k == "all");
    if req.keep.is_empty() && req.drop.is_empty() && req.choose.is_none() && req.widen.is_empty() {
        return Err(ContextError::Usage(
            "nothing to decide: name operations with --keep <id>, --drop <id>, --choose <id> or --widen <id> --widen-to <where>".into(),
        ));
    }
    if keep_all && req.session.is_none() {
        return Err(ContextError::Usage(
            "--keep all keeps one session's suggestions: name it with --session <id>".into(),
        ));
    }
    if req.session.is_some() && !keep_all {
        return Err(ContextError::Usage(
            "--session with a decision takes --keep all (to list a session's suggestions, give --session alone)".into(),
        ));
    }
    if !req.widen.is_empty() && req.widen_to.is_none() {
        return Err(ContextError::Usage(
            "--widen <id> needs --widen-to <axis|project|workspace>".into(),
        ));
    }
    if req.widen_to.is_some() && req.keep.is_empty() && req.choose.is_none() && req.widen.is_empty()
    {
        return Err(ContextError::Usage(
            "--widen-to widens what this round keeps or chooses, or a rule in force named with --widen <id>".into(),
        ));
    }
    check_window(req.valid_from.as_deref(), req.valid_to.as_deref())?;
    // The policy first: an agent is refused before the log is read.
    let actor = session.actor();
    for kind in [
        (req.choose.is_some() || !req.keep.is_empty()).then_some(Kind::Keep),
        (!req.drop.is_empty()).then_some(Kind::Drop),
        (req.widen_to.is_some()).then_some(Kind::Widen),
    ]
    .into_iter()
    .flatten()
    {
        person_decides(&Transition::new(actor, kind, None))?;
    }
    let ledger = session.ledger()?;
    let ids = ledger.ids();
    let mut round = Round {
        ledger: &ledger,
        steps: Vec::new(),
    };
    let mut left = Vec::new();

    // The choice: the rivals dropped, the chosen side kept.
    let mut kept: Vec<OpId> = Vec::new();
    let mut widen_in_force: Vec<OpId> = Vec::new();
    // What `--keep all` kept: a widening that would change nothing for one
    // of them leaves it where it holds instead of refusing the round.
    let mut of_session: Vec<OpId> = Vec::new();
    if let Some(choice) = &req.choose {
        let id = *resolve(choice, &ids)?;
        let state = subject_state(&ledger, &id, "choose")?;
        if state.status != Status::Contested {
            return Err(ContextError::Refused(format!(
                "#{} is {}, not contested: there is no side to choose (keep it with --keep {})",
                id.short(),
                state.status.as_str(),
                id.short()
            )));
        }
        for rival in &state.contested_by {
            if ledger
                .state(rival.as_str())
                .is_some_and(|s| s.status.answers())
            {
                round.push(Kind::Drop, rival)?;
            }
        }
        round.push(Kind::Keep, &id)?;
        kept.push(id);
    }
    // The drops.
    for prefix in &req.drop {
        let id = *resolve(prefix, &ids)?;
        round.push(Kind::Drop, &id)?;
    }
    // The keeps: named, or what a session suggested.
    for prefix in &req.keep {
        if prefix == "all" {
            continue;
        }
        let id = *resolve(prefix, &ids)?;
        // Keeping a rule in force only to widen it records the widen alone.
        let in_force = ledger
            .state(id.as_str())
            .is_some_and(|s| s.status == Status::Established && !req.changes(s));
        if in_force && req.widen_to.is_some() {
            widen_in_force.push(id);
        } else if round.push(Kind::Keep, &id)? {
            kept.push(id);
        }
    }
    if let Some(s) = req.session.as_deref().filter(|_| keep_all) {
        let mut any = false;
        for (record, state) in ledger.iter() {
            let Some(state) = state else { continue };
            if record.actor.session.as_deref() != Some(s) {
                continue;
            }
            any = true;
            let id = record.op_id();
            match state.status {
                // What this round drops stays dropped.
                Status::Suggested
                    if !plain_correction_at_rest(record, state)
                        && !round.has(Kind::Drop, &id)
                        && round.push(Kind::Keep, &id)? =>
                {
                    kept.push(id);
                    of_session.push(id);
                }
                Status::Contested if !round.has(Kind::Keep, &id) => {
                    let dropped = round.dropped();
                    let rivals: Vec<OpId> = state
                        .contested_by
                        .iter()
                        .filter(|r| !dropped.contains(r))
                        .copied()
                        .collect();
                    if rivals.is_empty() {
                        round.push(Kind::Keep, &id)?;
                        kept.push(id);
                        of_session.push(id);
                    } else {
                        left.push(Left {
                            id: record.id.clone(),
                            short: record.short().to_owned(),
                            subject: describe(record),
                            contested_by: rivals,
                        });
                    }
                }
                _ => {}
            }
        }
        if !any {
            return Err(ContextError::Usage(format!(
                "no operation of the log was recorded in session {s}"
            )));
        }
    }

    let shapes_keeps = req.valid_from.is_some() || req.valid_to.is_some() || req.advisory;
    if shapes_keeps && kept.is_empty() && left.is_empty() {
        return Err(ContextError::Usage(
            "--valid-from, --valid-to and --advisory shape what this round keeps: add --keep <id> or --choose <id>".into(),
        ));
    }
    // Check every step before recording anything.
    let drops = round.dropped().into_iter().copied().collect::<Vec<_>>();
    for (kind, id, _) in &round.steps {
        admissible(session, &ledger, req, id, *kind, &drops)?;
    }
    for id in &kept {
        // The window the keep leaves: the bounds given, the others kept.
        if let Some(state) = round.state(id) {
            let from = req.valid_from.as_ref().or(state.scope.valid_from.as_ref());
            let to = req.valid_to.as_ref().or(state.scope.valid_to.as_ref());
            check_window(from.map(String::as_str), to.map(String::as_str))?;
        }
    }
    // The widenings: what this round keeps, then the rules in force named.
    let mut widens: Vec<(OpId, Scope)> = Vec::new();
    if let Some(to) = &req.widen_to {
        let mut targets = kept.clone();
        let named = req
            .widen
            .iter()
            .map(|p| resolve(p, &ids).copied())
            .collect::<Result<Vec<_>, _>>()?;
        for id in widen_in_force.into_iter().chain(named) {
            let state = subject_state(&ledger, &id, "widen")?;
            if state.status != Status::Established && !kept.contains(&id) {
                return Err(ContextError::Refused(format!(
                    "refusing to widen #{0}: it is {1}, not a rule in force; keep it and widen it in one step (`kapi context review --keep {0} --widen-to <where>`)",
                    id.short(),
                    state.status.as_str()
                )));
            }
            if !targets.contains(&id) {
                targets.push(id);
            }
        }
        for id in targets {
            let record = ledger.get(id.as_str()).expect("resolved ids are held");
            let state = subject_state(&ledger, &id, "widen")?;
            if !matches!(
                record.subject,
                Some(Subject::Term { .. } | Subject::Note { .. })
            ) {
                return Err(ContextError::Refused(format!(
                    "refusing to widen #{}: only a term rule or a note is widened",
                    id.short()
                )));
            }
            let wider = match widened(&state.scope, to, is_note(record)) {
                Ok(wider) => wider,
                Err(WidenError::AlreadyProject { .. } | WidenError::AxisNotSet { .. })
                    if of_session.contains(&id) =>
                {
                    continue;
                }
                Err(e) => {
                    return Err(ContextError::Refused(format!(
                        "refusing to widen #{}: {e}",
                        id.short()
                    )));
                }
            };
            person_decides(&Transition::new(actor, Kind::Widen, Some(record)))?;
            widens.push((
                id,
                Scope {
                    point: wider.point,
                    workspace: wider.workspace,
                    ..Scope::default()
                },
            ));
        }
    }
    for (id, scope) in widens {
        round.steps.push((Kind::Widen, id, Some(scope)));
    }

    let mut records = Vec::new();
    for (kind, id, scope) in round.steps {
        let mut record = session.record(kind);
        record.target = Some(id.to_string());
        record.note.clone_from(&req.note);
        match kind {
            Kind::Keep => {
                record.scope.valid_from.clone_from(&req.valid_from);
                record.scope.valid_to.clone_from(&req.valid_to);
                record.advisory = req.advisory;
            }
            Kind::Widen => record.scope = scope.expect("a widen carries its scope"),
            _ => {}
        }
        records.push(record);
    }
    if records.is_empty() {
        return Err(ContextError::Refused(if left.is_empty() {
            format!(
                "session {} left nothing to keep",
                req.session.as_deref().unwrap_or_default()
            )
        } else {
            format!(
                "nothing recorded: every suggestion of session {} is contested; {}",
                req.session.as_deref().unwrap_or_default(),
                left_text(&left)
            )
        }));
    }
    Ok((session.append_all(records)?, left))
}

/// `#a is contested by #b; choose a side with ...`
pub fn left_text(left: &[Left]) -> String {
    left.iter()
        .map(|l| {
            let names: Vec<String> = l
                .contested_by
                .iter()
                .map(|r| format!("#{}", r.short()))
                .collect();
            format!(
                "#{} is contested by {} (choose a side with `kapi context review --choose <id>`)",
                l.short,
                names.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The folded state of a subject a decision names.
fn subject_state<'l>(ledger: &'l Ledger, id: &OpId, verb: &str) -> Result<&'l State, ContextError> {
    let target = ledger.get(id.as_str()).expect("resolved ids are held");
    ledger.state(id.as_str()).ok_or_else(|| {
        ContextError::Refused(format!(
            "refusing to {verb} #{}: it is a {} and states no rule or note",
            id.short(),
            target.kind.as_str()
        ))
    })
}

fn admissible(
    session: &Session,
    ledger: &Ledger,
    req: &ReviewRequest,
    id: &OpId,
    kind: Kind,
    drops: &[OpId],
) -> Result<(), ContextError> {
    let target = ledger.get(id.as_str()).expect("resolved ids are held");
    person_decides(&Transition::new(session.actor(), kind, Some(target)))?;
    let short = id.short();
    let state = subject_state(ledger, id, kind.as_str())?;
    match (kind, state.status) {
        (_, Status::Reset) => Err(ContextError::Refused(format!(
            "refusing to {} #{short}: a reset set it aside; reset to before that reset to bring it back",
            kind.as_str()
        ))),
        (Kind::Drop, Status::Dropped) => Err(ContextError::Refused(format!(
            "#{short} is already dropped"
        ))),
        (Kind::Drop, Status::Withdrawn) => Err(ContextError::Refused(format!(
            "#{short} was withdrawn by its author; there is nothing to drop"
        ))),
        (Kind::Keep, Status::Dropped | Status::Withdrawn) => Ok(()),
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
                "refusing to keep #{short}: it is contested by {}; choose a side with `kapi context review --choose {short}` (or `--choose {}`)",
                names.join(", "),
                rivals[0].short()
            )))
        }
        (Kind::Keep, Status::Established) if !req.changes(state) => {
            Err(ContextError::Refused(format!(
                "#{short} is already established; nothing to record (widen a rule in force with `--widen {short} --widen-to <where>`)"
            )))
        }
        _ => Ok(()),
    }
}

impl ReviewRequest {
    /// Whether a keep of an established rule would change its window or advice.
    fn changes(&self, state: &State) -> bool {
        self.valid_from.is_some() || self.valid_to.is_some() || self.advisory != state.advisory
    }
}
