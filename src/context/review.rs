//! `kapi context review`: one round of a person's decisions, and the digest
//! they are taken from.
//!
//! A round ([`ReviewRequest`]) may choose a side of a disagreement, drop,
//! keep (one by one, or everything a session suggested), and widen; it is
//! checked whole before anything is recorded, then recorded in a fixed
//! order: the choice (the rivals dropped, the chosen side kept), the drops,
//! the keeps, then the widenings. So a keep never meets a rival the same
//! round drops. A round may carry a Replacement (other forms than the
//! agent proposed for the one suggestion it keeps): recorded as the keep,
//! then an `edit` naming it. The terminal walk and the flags both call
//! [`review`].

use std::path::PathBuf;

use serde::Serialize;

use super::door::Recorded;
use super::{ContextError, Session};
use crate::ops::group::Groups;
use crate::ops::id::{OpId, resolve};
use crate::ops::record::{Actor, ActorKind, Kind, Record, Scope, Subject};
use crate::ops::scope::check_window;
use crate::ops::widen::{WidenError, WidenTo, widenable, widened};
use crate::ops::{Draft, Drafted};
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
    /// A Replacement: keep the one suggestion named (`--keep <id>` or
    /// `--choose <id>`) with this form to use instead of the one proposed
    /// (recorded as keep + edit).
    pub replace_use: Option<String>,
    /// A Replacement's forms to avoid instead of those proposed.
    pub replace_avoid: Vec<String>,
}

/// What one round of decisions recorded, and the rules files it refreshed.
#[derive(Debug, Serialize)]
pub struct Reviewed {
    pub recorded: Vec<Record>,
    /// Suggestions `--keep all` left for later because something contests
    /// them, each with the other side.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<Left>,
    /// Notes this round kept: a note states no rule, so no store holds
    /// it; the keep in the operation log is its only record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes_kept: Vec<OpId>,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// This round widened a rule to the workspace, and so this checkout
    /// now shares the rules its log widens with every other repository on
    /// this machine (it did not before): the checkout, canonical.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shares_with_workspace: Option<PathBuf>,
    /// Why refreshing them failed, after the change was recorded: a
    /// surface shows what was recorded, then this.
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// A contested suggestion a session's `--keep all` did not keep.
#[derive(Debug, Clone, Serialize)]
pub struct Left {
    pub id: OpId,
    pub short: String,
    pub subject: String,
    pub contested_by: Vec<OpId>,
}

/// Record one round of decisions (the door refreshes the rules files).
pub fn review(session: &Session, req: ReviewRequest) -> Result<Reviewed, ContextError> {
    let (
        Recorded {
            records: recorded,
            refreshed,
            refresh_error,
        },
        left,
        notes_kept,
    ) = decide(session, &req)?;
    let shares_with_workspace = share_if_widened(session, &recorded);
    Ok(Reviewed {
        recorded,
        left,
        notes_kept,
        refreshed,
        shares_with_workspace,
        refresh_error,
    })
}

/// A person who widens a rule to the workspace in this checkout chooses,
/// on this machine, that its workspace rules hold in the other checkouts:
/// the registry marks it as sharing (best effort, as registering is). A
/// widening merged from elsewhere is never this act.
fn share_if_widened(session: &Session, recorded: &[Record]) -> Option<PathBuf> {
    let widened = recorded
        .iter()
        .any(|r| r.kind == Kind::Widen && r.scope.workspace);
    if !widened || session.actor().kind != ActorKind::Person {
        return None;
    }
    match super::workspace::share(session) {
        Ok(added) if !added.already => Some(added.path),
        _ => None,
    }
}

/// One subject of the digest: a suggestion or contested subject awaiting
/// a decision, or a rule or note in force, with what a person may do.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    pub id: OpId,
    pub short: String,
    pub status: Status,
    /// The subject in words: `"Quickcast", not "Quick cast"`, a note's
    /// text, or a correction `"from" → "to"`.
    pub subject: String,
    /// Who recorded it (`claude (session s1)`).
    pub actor: String,
    /// The reader recorded it (the same person, or the same agent in the
    /// same session): the digest says "you". Not in the JSON document,
    /// whose `actor` names every party the same way for every reader.
    #[serde(skip)]
    pub yours: bool,
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
    /// A term rule a person may keep with other forms than proposed (a
    /// Replacement). Not in the JSON document: `keepable` and the subject
    /// say it.
    #[serde(skip)]
    pub replaceable: bool,
    /// A person may drop it: a suggestion or a rule in force.
    pub droppable: bool,
    /// A rule or note in force that can apply more widely
    /// (`--widen <id> --widen-to <where>`).
    pub widenable: bool,
    /// When several operations state the rule, every one of them, this
    /// one first: suggestions that state one rule are one item
    /// ([`crate::ops::group`]), and a decision on any of them is a
    /// decision on all.
    #[serde(skip_serializing_if = "alone")]
    pub members: Vec<Member>,
}

fn alone<T>(members: &[T]) -> bool {
    members.len() < 2
}

/// One operation behind a digest item.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    pub id: OpId,
    pub short: String,
    /// Who recorded it.
    pub actor: String,
    /// The reader recorded it, as [`Pending::yours`].
    #[serde(skip)]
    pub yours: bool,
    /// Where and when it holds.
    #[serde(skip_serializing_if = "Scope::is_empty")]
    pub scope: Scope,
}

/// The digest: every subject awaiting a decision and every rule or note in
/// force, in id order.
#[cfg(test)]
pub fn pending(ledger: &Ledger) -> Vec<Pending> {
    pending_from(ledger, None, None)
}

/// The digest of what `session` recorded, when one is named. A rule that
/// several operations state (two agents suggested it) is one item, shown
/// by the first of them and naming them all; with `session`, an item shows
/// when one of its members was recorded in it. What `reader` recorded is
/// marked [`Pending::yours`].
pub fn pending_from(
    ledger: &Ledger,
    session: Option<&str>,
    reader: Option<&Actor>,
) -> Vec<Pending> {
    let yours = |r: &Record| reader.is_some_and(|a| r.actor.same_party(a));
    let groups = ledger.rule_groups();
    let mut shown: std::collections::HashSet<OpId> = std::collections::HashSet::new();
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
        let members = groups.of(&record.op_id());
        let lead = members[0];
        if !shown.insert(lead) {
            continue;
        }
        let (record, state) = match (ledger.get(&lead), ledger.state(&lead)) {
            (Some(r), Some(s)) => (r, s),
            _ => (record, state),
        };
        let states: Vec<(&Record, &State)> = members
            .iter()
            .filter_map(|m| Some((ledger.get(m)?, ledger.state(m)?)))
            .collect();
        // The group drifts when one member does; it says which counts.
        let drifting = states
            .iter()
            .find(|(_, s)| s.drift.is_some())
            .map(|(_, s)| *s);
        let mut contested_by: Vec<OpId> = states
            .iter()
            .flat_map(|(_, s)| s.contested_by.iter().copied())
            .collect();
        contested_by.sort_unstable();
        contested_by.dedup();
        let in_force = state.status == Status::Established;
        out.push(Pending {
            id: record.op_id(),
            short: record.short().to_owned(),
            status: state.status,
            subject: describe(record),
            actor: record.actor.label(),
            yours: yours(record),
            contested_by,
            standing: drifting.unwrap_or(state).standing_text(),
            scope: state.scope.clone(),
            awaiting: !in_force || drifting.is_some(),
            keepable: !in_force,
            replaceable: !in_force
                && matches!(record.subject.as_deref(), Some(Subject::Term { .. })),
            droppable: true,
            widenable: in_force && states.iter().any(|(r, s)| widens_at_all(r, s)),
            members: states
                .iter()
                .map(|(r, s)| Member {
                    id: r.op_id(),
                    short: r.short().to_owned(),
                    actor: r.actor.label(),
                    yours: yours(r),
                    scope: s.scope.clone(),
                })
                .collect(),
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
    matches!(record.subject.as_deref(), Some(Subject::Note { .. }))
}

/// A term rule or a note whose scope some widening would change.
fn widens_at_all(record: &Record, state: &State) -> bool {
    matches!(
        record.subject.as_deref(),
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
/// A decision on one member of a group of suggestions that state one rule
/// is taken for every member ([`crate::ops::group`]).
struct Round<'l> {
    ledger: &'l Ledger,
    groups: Groups,
    /// (kind, target, scope of a widen)
    steps: Vec<(Kind, OpId, Option<Scope>)>,
    /// What the round keeps (the chosen side included), in order.
    kept: Vec<OpId>,
    /// What `--keep all` kept: a widening that would change nothing for
    /// one of them leaves it where it holds instead of refusing the round.
    of_session: Vec<OpId>,
    /// Rules in force named with --keep and --widen-to: only widened.
    widen_in_force: Vec<OpId>,
    /// Contested suggestions `--keep all` left for later.
    left: Vec<Left>,
    /// Members a decision on another member of their group brought.
    brought: Vec<OpId>,
}

impl<'l> Round<'l> {
    fn new(ledger: &'l Ledger) -> Self {
        Round {
            ledger,
            groups: ledger.rule_groups(),
            steps: Vec::new(),
            kept: Vec::new(),
            of_session: Vec::new(),
            widen_in_force: Vec::new(),
            left: Vec::new(),
            brought: Vec::new(),
        }
    }

    fn has(&self, kind: Kind, id: &OpId) -> bool {
        self.steps.iter().any(|(k, t, _)| *k == kind && t == id)
    }

    fn dropped(&self) -> Vec<OpId> {
        self.steps
            .iter()
            .filter(|(k, _, _)| *k == Kind::Drop)
            .map(|(_, t, _)| *t)
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
        if kind == Kind::Keep {
            self.kept.push(*id);
        }
        Ok(true)
    }

    /// The members of `id`'s group: `id` first, then the others in log
    /// order (noted as brought by their group: a widening that changes
    /// nothing for one of them leaves it where it holds).
    fn group(&mut self, id: &OpId) -> Vec<OpId> {
        let mut members = self.groups.of(id);
        members.retain(|m| m != id);
        for m in &members {
            if !self.brought.contains(m) {
                self.brought.push(*m);
            }
        }
        members.insert(0, *id);
        members
    }

    /// The choice: every rival that answers dropped, the chosen side kept
    /// (every member of its group).
    fn choose(&mut self, id: OpId) -> Result<(), ContextError> {
        let state = subject_state(self.ledger, &id, "choose")?;
        if state.status != Status::Contested {
            // Offer a keep only where a keep is taken.
            let instead = match state.status {
                Status::Suggested | Status::Dropped | Status::Withdrawn => {
                    format!(
                        " (keep it with `kapi context review --keep {}`)",
                        id.short()
                    )
                }
                Status::Established => " (it is in force already)".to_owned(),
                Status::Reset => " (a reset set it aside)".to_owned(),
                Status::Contested => unreachable!("contested is handled below"),
            };
            return Err(ContextError::Refused(format!(
                "#{} is {}, not contested: there is no side to choose{instead}",
                id.short(),
                state.status.as_str(),
            )));
        }
        let side = self.group(&id);
        for member in &side {
            let state = subject_state(self.ledger, member, "choose")?;
            for rival in &state.contested_by {
                let answers = self.ledger.state(rival).is_some_and(|s| s.status.answers());
                if answers {
                    self.push(Kind::Drop, rival)?;
                }
            }
        }
        for member in &side {
            self.push(Kind::Keep, member)?;
        }
        Ok(())
    }

    /// A drop by id: of every member of its group.
    fn drop(&mut self, id: OpId) -> Result<(), ContextError> {
        for member in self.group(&id) {
            self.push(Kind::Drop, &member)?;
        }
        Ok(())
    }

    /// A keep by id (of every member of its group); keeping a rule in
    /// force only to widen it records the widen alone.
    fn keep(&mut self, id: OpId, req: &ReviewRequest) -> Result<(), ContextError> {
        for member in self.group(&id) {
            let in_force = self
                .ledger
                .state(&member)
                .is_some_and(|s| s.status == Status::Established && !req.changes(s));
            if in_force && req.widen_to.is_some() {
                if !self.widen_in_force.contains(&member) {
                    self.widen_in_force.push(member);
                }
            } else {
                self.push(Kind::Keep, &member)?;
            }
        }
        Ok(())
    }

    /// `--session <s> --keep all`: every suggestion of the session that
    /// nothing contests (or whose rivals this round drops); the contested
    /// ones are left, naming the other side. What the round drops stays
    /// dropped.
    fn keep_session(&mut self, s: &str) -> Result<(), ContextError> {
        let ledger = self.ledger;
        let mut any = false;
        for (record, state) in ledger.iter() {
            let Some(state) = state else { continue };
            if record.actor.session.as_deref() != Some(s) {
                continue;
            }
            any = true;
            let id = record.op_id();
            let rivals: Vec<OpId> = match state.status {
                Status::Suggested if !plain_correction_at_rest(record, state) => Vec::new(),
                Status::Contested => {
                    let dropped = self.dropped();
                    state
                        .contested_by
                        .iter()
                        .filter(|r| !dropped.contains(r))
                        .copied()
                        .collect()
                }
                _ => continue,
            };
            if self.has(Kind::Drop, &id) || self.has(Kind::Keep, &id) {
                continue;
            }
            if rivals.is_empty() {
                // The rule, with every other suggestion that states it.
                for member in self.group(&id) {
                    if !self.has(Kind::Drop, &member) && self.push(Kind::Keep, &member)? {
                        self.of_session.push(member);
                    }
                }
            } else {
                self.left.push(Left {
                    id: record.op_id(),
                    short: record.short().to_owned(),
                    subject: describe(record),
                    contested_by: rivals,
                });
            }
        }
        if !any {
            return Err(ContextError::Usage(format!(
                "no operation of the log was recorded in session {s}"
            )));
        }
        Ok(())
    }

    /// The widenings `to` asks for: what the round keeps, then the rules in
    /// force named (each must be one, and brings its group), each with the
    /// scope it leaves.
    fn widenings(
        &mut self,
        to: &WidenTo,
        named: &[OpId],
    ) -> Result<Vec<(OpId, Scope)>, ContextError> {
        let mut targets = self.kept.clone();
        let named: Vec<OpId> = named.iter().flat_map(|id| self.group(id)).collect();
        for id in self.widen_in_force.iter().chain(&named) {
            let state = subject_state(self.ledger, id, "widen")?;
            if state.status != Status::Established && !self.kept.contains(id) {
                // The one step that puts it in force and widens it, where
                // there is one: a keep, or for a contested side a choice.
                let instead = match state.status {
                    Status::Contested => format!(
                        "; choose it and widen it in one step (`kapi context review --choose {} --widen-to <where>`)",
                        id.short()
                    ),
                    Status::Reset => "; a reset set it aside".to_owned(),
                    _ => format!(
                        "; keep it and widen it in one step (`kapi context review --keep {} --widen-to <where>`)",
                        id.short()
                    ),
                };
                return Err(ContextError::Refused(format!(
                    "refusing to widen #{}: it is {}, not a rule in force{instead}",
                    id.short(),
                    state.status.as_str()
                )));
            }
            if !targets.contains(id) {
                targets.push(*id);
            }
        }
        let mut out = Vec::new();
        for id in targets {
            let record = held(self.ledger, &id)?;
            let state = subject_state(self.ledger, &id, "widen")?;
            if !matches!(
                record.subject.as_deref(),
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
                    if self.of_session.contains(&id) || self.brought.contains(&id) =>
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
            // A widen names the point the rule then holds at; its window
            // stays as it is.
            let scope = Scope {
                point: wider.point,
                workspace: wider.workspace,
                ..Scope::default()
            };
            out.push((id, scope));
        }
        Ok(out)
    }
}

impl ReviewRequest {
    fn keeps_all(&self) -> bool {
        self.keep.iter().any(|k| k == "all")
    }

    /// Whether the flags make a round, before the log is read.
    fn check_shape(&self) -> Result<(), ContextError> {
        let usage = |m: &str| Err(ContextError::Usage(m.to_owned()));
        let decides = !self.keep.is_empty()
            || !self.drop.is_empty()
            || self.choose.is_some()
            || !self.widen.is_empty();
        if !decides {
            return usage(
                "nothing to decide: name operations with --keep <id>, --drop <id>, --choose <id> or --widen <id> --widen-to <where>",
            );
        }
        if self.keeps_all() && self.session.is_none() {
            return usage(
                "--keep all keeps one session's suggestions: name it with --session <id>",
            );
        }
        if self.session.is_some() && !self.keeps_all() {
            return usage(
                "--session with a decision takes --keep all (to list a session's suggestions, give --session alone)",
            );
        }
        if !self.widen.is_empty() && self.widen_to.is_none() {
            return usage("--widen <id> needs --widen-to <axis|project|workspace>");
        }
        if self.widen_to.is_some()
            && self.keep.is_empty()
            && self.choose.is_none()
            && self.widen.is_empty()
        {
            return usage(
                "--widen-to widens what this round keeps or chooses, or a rule in force named with --widen <id>",
            );
        }
        check_window(self.valid_from.as_deref(), self.valid_to.as_deref())?;
        Ok(())
    }

    fn replaces(&self) -> bool {
        self.replace_use.is_some() || !self.replace_avoid.is_empty()
    }

    /// The one subject a Replacement keeps, named before the log is read.
    fn replaced(&self) -> Result<Option<&str>, ContextError> {
        if !self.replaces() {
            return Ok(None);
        }
        let usage = |m: &str| Err(ContextError::Usage(m.to_owned()));
        if self.widen_to.is_some() {
            return usage(
                "a replacement keeps the rule as you wrote it where it was seen; widen it in a round of its own (`--widen <id> --widen-to <where>`)",
            );
        }
        match (self.keep.as_slice(), &self.choose) {
            ([one], None) if one != "all" => Ok(Some(one)),
            ([], Some(one)) => Ok(Some(one)),
            _ => usage(
                "--replace-use and --replace-avoid replace what one suggestion proposes: name it with one --keep <id> or --choose <id>",
            ),
        }
    }

    /// Whether a keep of an established rule would change its window or advice.
    fn changes(&self, state: &State) -> bool {
        self.valid_from.is_some() || self.valid_to.is_some() || self.advisory != state.advisory
    }
}

/// What `decide` recorded, the suggestions it left, and the notes it kept.
type Decided = (Recorded, Vec<Left>, Vec<OpId>);

fn decide(session: &Session, req: &ReviewRequest) -> Result<Decided, ContextError> {
    req.check_shape()?;
    let replaced = req.replaced()?;
    // The policy first: an agent is refused before the log is read (the
    // door asks it again of every operation the round records).
    let kinds = [
        (req.choose.is_some() || !req.keep.is_empty()).then_some(Kind::Keep),
        (!req.drop.is_empty()).then_some(Kind::Drop),
        (req.widen_to.is_some()).then_some(Kind::Widen),
    ];
    for kind in kinds.into_iter().flatten() {
        session.permits(kind)?;
    }
    if replaced.is_some() {
        session.permits(Kind::Edit)?;
    }
    let ledger = session.ledger()?;
    let ids = ledger.ids();
    let resolved = |prefixes: &[String]| -> Result<Vec<OpId>, ContextError> {
        Ok(prefixes
            .iter()
            .filter(|p| *p != "all")
            .map(|p| resolve(p, &ids).copied())
            .collect::<Result<_, _>>()?)
    };
    // A Replacement names one suggestion; one in force is edited instead.
    let replaced = match replaced {
        Some(named) => {
            let id = *resolve(named, &ids)?;
            if ledger
                .state(&id)
                .is_some_and(|s| s.status == Status::Established)
            {
                return Err(ContextError::Refused(format!(
                    "#{} is in force already; edit it with `kapi context edit {} --prefer <form> --avoid <form>`",
                    id.short(),
                    id.short()
                )));
            }
            Some(id)
        }
        None => None,
    };
    let mut round = Round::new(&ledger);
    // The choice, the drops, the keeps: in this order.
    if let Some(choice) = &req.choose {
        round.choose(*resolve(choice, &ids)?)?;
    }
    for id in resolved(&req.drop)? {
        round.drop(id)?;
    }
    for id in resolved(&req.keep)? {
        round.keep(id, req)?;
    }
    if let Some(s) = req.session.as_deref().filter(|_| req.keeps_all()) {
        round.keep_session(s)?;
    }
    let shapes_keeps = req.valid_from.is_some() || req.valid_to.is_some() || req.advisory;
    if shapes_keeps && round.kept.is_empty() && round.left.is_empty() {
        return Err(ContextError::Usage(
            "--valid-from, --valid-to and --advisory shape what this round keeps: add --keep <id> or --choose <id>".into(),
        ));
    }
    // Check every step before recording anything.
    let drops = round.dropped();
    for (kind, id, _) in &round.steps {
        admissible(&ledger, req, id, *kind, &drops)?;
    }
    for id in &round.kept {
        // The window the keep leaves: the bounds given, the others kept.
        if let Some(state) = ledger.state(id) {
            let from = req.valid_from.as_ref().or(state.scope.valid_from.as_ref());
            let to = req.valid_to.as_ref().or(state.scope.valid_to.as_ref());
            check_window(from.map(String::as_str), to.map(String::as_str))?;
        }
    }
    // Then the widenings.
    if let Some(to) = &req.widen_to {
        for (id, scope) in round.widenings(to, &resolved(&req.widen)?)? {
            round.steps.push((Kind::Widen, id, Some(scope)));
        }
    }
    // A Replacement: the suggestion named is kept and edited; the other
    // operations that proposed it as the agent did are dropped.
    let replacement = match replaced {
        Some(id) => {
            let members = round.groups.of(&id);
            for step in round.steps.iter_mut() {
                if step.0 == Kind::Keep && step.1 != id && members.contains(&step.1) {
                    step.0 = Kind::Drop;
                }
            }
            round.kept.retain(|k| *k == id || !members.contains(k));
            Some(replacement(&ledger, req, id)?)
        }
        None => None,
    };
    let left = std::mem::take(&mut round.left);
    let notes_kept = round
        .kept
        .iter()
        .filter(|id| ledger.get(id).is_some_and(is_note))
        .copied()
        .collect();
    let drafts: Vec<Draft> = round
        .steps
        .into_iter()
        .map(|(kind, target, scope)| {
            let what = match (kind, scope) {
                (Kind::Widen, Some(scope)) => Drafted::Widen { target, scope },
                (Kind::Drop, _) => Drafted::Drop { target },
                _ => Drafted::Keep {
                    target,
                    window: Scope {
                        valid_from: req.valid_from.clone(),
                        valid_to: req.valid_to.clone(),
                        ..Scope::default()
                    },
                    advisory: req.advisory,
                },
            };
            Draft::from(what).noting(req.note.clone())
        })
        .collect();
    let mut drafts = drafts;
    drafts.extend(replacement);
    if drafts.is_empty() {
        let s = req.session.as_deref().unwrap_or_default();
        return Err(ContextError::Refused(if left.is_empty() {
            format!("session {s} left nothing to keep")
        } else {
            format!(
                "nothing recorded: every suggestion of session {s} is contested; {}",
                left_text(&left)
            )
        }));
    }
    let recorded = session.record_deciding(drafts, ledger)?;
    Ok((recorded, left, notes_kept))
}

/// The edit a Replacement records after the keep of `id`: the forms the
/// person gave instead of those proposed, where the suggestion holds, with
/// the round's window and advice.
fn replacement(ledger: &Ledger, req: &ReviewRequest, id: OpId) -> Result<Draft, ContextError> {
    let record = held(ledger, &id)?;
    let state = subject_state(ledger, &id, "keep")?;
    let short = id.short();
    let Some(Subject::Term { preferred, avoid }) = record.subject.as_deref() else {
        return Err(ContextError::Refused(format!(
            "refusing to replace #{short}: only a term rule's forms are replaced in review; keep it, then `kapi context edit {short}`"
        )));
    };
    let edit = super::changeset::RuleEdit {
        preferred: req.replace_use.clone(),
        avoid: (!req.replace_avoid.is_empty()).then(|| req.replace_avoid.clone()),
        ..Default::default()
    };
    let subject = super::changeset::edited_term(preferred, avoid, &edit)?;
    if record.subject.as_deref() == Some(&subject) {
        return Err(ContextError::Usage(format!(
            "the replacement is what #{short} proposes; keep it without --replace-use and --replace-avoid"
        )));
    }
    let mut scope = state.scope.clone();
    if let Some(from) = &req.valid_from {
        scope.valid_from = Some(from.clone());
    }
    if let Some(to) = &req.valid_to {
        scope.valid_to = Some(to.clone());
    }
    Ok(Draft::from(Drafted::Edit {
        target: Some(id),
        subject,
        scope,
        advisory: req.advisory,
    })
    .noting(req.note.clone()))
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
                "#{} is contested by {} (choose a side with `kapi context review --choose {}`)",
                l.short,
                names.join(", "),
                l.short
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The folded state of a subject a decision names.
fn subject_state<'l>(ledger: &'l Ledger, id: &OpId, verb: &str) -> Result<&'l State, ContextError> {
    let target = held(ledger, id)?;
    ledger.state(id).ok_or_else(|| {
        ContextError::Refused(format!(
            "refusing to {verb} #{}: it is a {} and states no rule or note",
            id.short(),
            target.kind.as_str()
        ))
    })
}

/// The operation `id` names, which a prefix resolved against this ledger.
fn held<'l>(ledger: &'l Ledger, id: &OpId) -> Result<&'l Record, ContextError> {
    ledger.get(id).ok_or_else(|| {
        ContextError::Refused(format!(
            "#{} is not an operation this log holds",
            id.short()
        ))
    })
}

fn admissible(
    ledger: &Ledger,
    req: &ReviewRequest,
    id: &OpId,
    kind: Kind,
    drops: &[OpId],
) -> Result<(), ContextError> {
    let short = id.short();
    let target = held(ledger, id)?;
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
                    ledger.get(r).is_some_and(|o| {
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
            let widen = if widens_at_all(target, state) {
                format!(
                    " (widen a rule in force with `kapi context review --widen {short} --widen-to <where>`)"
                )
            } else {
                String::new()
            };
            Err(ContextError::Refused(format!(
                "#{short} is already established; nothing to record{widen}"
            )))
        }
        _ => Ok(()),
    }
}
