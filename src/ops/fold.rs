//! The fold: replay the log in id order and give every subject its status.
//!
//! `fold` is a pure function of the records it is given. It applies the
//! set-asides of resets, re-checks every operation against the policy (a
//! remote can push anything: what the policy refuses is ignored and listed),
//! applies people's decisions and the establishments settling recorded, and
//! then marks disagreements. Every reader calls it, so they agree.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::forms::{case_key, form_matches, is_case_only};
use super::policy::{Transition, person_decides};
use super::record::{ActorKind, Kind, Record, Scope, SignalSource, Subject};
use super::scope::Point;

/// What became of a subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing has acted on it: it advises.
    Suggested,
    /// A person kept, imported or wrote it, or settling established it: it binds.
    Established,
    /// It disagrees with another rule, named in `contested_by`: it advises.
    Contested,
    /// Its author took it back in the session that recorded it.
    Withdrawn,
    /// A person set it aside.
    Dropped,
    /// A reset set it aside.
    Reset,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Suggested,
        Status::Established,
        Status::Contested,
        Status::Withdrawn,
        Status::Dropped,
        Status::Reset,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Suggested => "suggested",
            Status::Established => "established",
            Status::Contested => "contested",
            Status::Withdrawn => "withdrawn",
            Status::Dropped => "dropped",
            Status::Reset => "reset",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether a rule with this status answers (binds or advises).
    pub fn answers(self) -> bool {
        matches!(
            self,
            Status::Suggested | Status::Established | Status::Contested
        )
    }
}

/// The counts behind a suggestion, shown as counts, never as a score.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// Sessions (or people) that recorded the same rule.
    pub sessions: usize,
    /// The latest usage counts: uses of the preferred and of avoided forms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<(u64, u64)>,
    /// Merge signals recorded for it.
    pub merges: usize,
}

impl Standing {
    /// `seen in 2 sessions · 14 of 15 uses · merged 1×`
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "seen in {} session{}",
            self.sessions,
            if self.sessions == 1 { "" } else { "s" }
        )];
        if let Some((preferred, avoided)) = self.usage {
            parts.push(format!("{preferred} of {} uses", preferred + avoided));
        }
        if self.merges > 0 {
            parts.push(format!("merged {}×", self.merges));
        }
        parts.join(" · ")
    }
}

/// The folded state of one subject-bearing operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct State {
    pub status: Status,
    pub contested_by: Vec<String>,
    pub established: bool,
    /// The scope in force: the record's, or the one a later keep or widen set.
    pub scope: Scope,
    pub advisory: bool,
    pub standing: Standing,
    /// A person kept, imported or wrote it (or settling established it) at
    /// some point: it is no longer only a suggestion, even while contested.
    pub kept: bool,
    /// The operation that last decided it (keep, drop, withdraw, establish, reset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// An operation the fold read but did not apply, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ignored {
    pub id: String,
    pub reason: String,
}

/// The folded log.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Every record, in id order.
    pub records: Vec<Record>,
    /// The state of each subject-bearing record, parallel to `records`.
    states: Vec<Option<Box<State>>>,
    pub ignored: Vec<Ignored>,
}

/// The position of `id` in records sorted by id.
fn position_by_key(keys: &[u128], id: &str) -> Option<usize> {
    if !super::id::is_id(id) {
        return None;
    }
    keys.binary_search(&super::id::key(id)).ok()
}

fn position(records: &[Record], id: &str) -> Option<usize> {
    records.binary_search_by(|r| r.id.as_str().cmp(id)).ok()
}

impl Ledger {
    pub fn get(&self, id: &str) -> Option<&Record> {
        position(&self.records, id).map(|i| &self.records[i])
    }

    pub fn state(&self, id: &str) -> Option<&State> {
        position(&self.records, id).and_then(|i| self.states[i].as_deref())
    }

    /// Records with their states, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&Record, Option<&State>)> {
        self.records
            .iter()
            .zip(self.states.iter().map(Option::as_deref))
    }

    /// The ids the log holds, sorted (for prefix resolution).
    pub fn ids(&self) -> Vec<super::id::OpId> {
        self.records.iter().map(Record::op_id).collect()
    }

    /// Term rules that answer at `point` and instant `at` (Unix ms; `None`
    /// for every window), with their states, in id order.
    pub fn term_rules_at<'a>(
        &'a self,
        point: &'a Point,
        at: Option<i64>,
    ) -> impl Iterator<Item = (&'a Record, &'a State)> {
        self.iter().filter_map(move |(r, state)| {
            let state = state?;
            let is_term = matches!(r.subject, Some(Subject::Term { .. }));
            (is_term
                && state.status.answers()
                && state.scope.covers(point)
                && state.scope.in_force(at))
            .then_some((r, state))
        })
    }
}

/// Fold records (any order; duplicates by content address are resolved here:
/// the older id stands).
pub fn fold(mut records: Vec<Record>) -> Ledger {
    if !records.is_sorted_by(|a, b| a.id <= b.id) {
        records.sort_by(|a, b| a.id.cmp(&b.id));
    }
    records.dedup_by(|b, a| a.id == b.id);
    let mut ignored = Vec::new();
    let mut seen_addresses = BTreeSet::new();
    records.retain(|r| match &r.address {
        Some(address) if !seen_addresses.insert(address.clone()) => {
            ignored.push(Ignored {
                id: r.id.clone(),
                reason: format!("an older operation holds content address {address}"),
            });
            false
        }
        _ => true,
    });
    let set_aside = set_aside(&records);
    let keys: Vec<u128> = records.iter().map(|r| super::id::key(&r.id)).collect();

    let mut states: Vec<Option<Box<State>>> = vec![None; records.len()];
    // Where each rule was last kept or established (a position in the log).
    let mut kept_at: Vec<Option<usize>> = vec![None; records.len()];
    // The latest import of each file: a new import of a path supersedes it.
    let mut imported: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let target_at = r.target.as_deref().and_then(|t| position_by_key(&keys, t));
        let transition = Transition {
            actor: &r.actor,
            kind: r.kind,
            target: target_at.map(|t| &records[t]),
            widening: false,
            editing: false,
        };
        if let Err(e) = person_decides(&transition) {
            ignored.push(Ignored {
                id: r.id.clone(),
                reason: e.to_string(),
            });
            continue;
        }
        if set_aside[i] {
            if r.has_subject() {
                states[i] = Some(Box::new(new_state(r, Status::Reset)));
            }
            continue;
        }
        if r.has_subject() && !r.kind.needs_target() {
            let status = if matches!(r.kind, Kind::Import | Kind::Edit) {
                kept_at[i] = Some(i);
                Status::Established
            } else {
                Status::Suggested
            };
            states[i] = Some(Box::new(new_state(r, status)));
            if r.kind == Kind::Import
                && let Some(path) = r.evidence.first().and_then(|e| e.path.as_deref())
                && let Some(earlier) = imported.insert(path, i)
                && let Some(state) = states[earlier].as_mut()
                && state.status.answers()
            {
                state.status = Status::Dropped;
                state.established = false;
                state.decided_by = Some(r.id.clone());
            }
            continue;
        }
        let Some(target_id) = r.target.as_deref() else {
            continue;
        };
        let Some((t, state)) = target_at.and_then(|t| states[t].as_mut().map(|s| (t, s))) else {
            if r.kind.needs_target() {
                ignored.push(Ignored {
                    id: r.id.clone(),
                    reason: format!("it acts on #{target_id}, which holds no subject here"),
                });
            }
            continue;
        };
        let decide = |state: &mut State, status: Status| {
            state.status = status;
            state.established = status == Status::Established;
            state.decided_by = Some(r.id.clone());
        };
        match r.kind {
            Kind::Keep => {
                if r.scope.valid_from.is_some() || r.scope.valid_to.is_some() {
                    state.scope.valid_from = r.scope.valid_from.clone();
                    state.scope.valid_to = r.scope.valid_to.clone();
                }
                state.advisory = r.advisory;
                state.kept = true;
                decide(state, Status::Established);
                kept_at[t] = Some(i);
            }
            Kind::Drop => decide(state, Status::Dropped),
            Kind::Withdraw if state.status == Status::Suggested && !state.kept => decide(state, Status::Withdrawn),
            Kind::Withdraw => ignored.push(Ignored {
                id: r.id.clone(),
                reason: format!(
                    "#{} is no longer a suggestion ({})",
                    &target_id[..10],
                    state.status.as_str()
                ),
            }),
            // Settling (and the evidence an establish rests on) arrives with
            // the settling work; until the fold can read that evidence again,
            // an establish binds nothing.
            Kind::Establish => ignored.push(Ignored {
                id: r.id.clone(),
                reason: "establish operations are not applied yet: this kapi cannot re-read the evidence they rest on"
                    .into(),
            }),
            Kind::Widen => state.scope.point = r.scope.point.clone(),
            Kind::Signal => {
                if let Some(signal) = &r.signal {
                    match signal.source {
                        SignalSource::Usage => {
                            state.standing.usage = Some((signal.preferred, signal.avoided))
                        }
                        SignalSource::Merge => state.standing.merges += 1,
                        SignalSource::Applied => {}
                    }
                }
            }
            _ => {}
        }
    }

    mark_disagreements(&records, &mut states, &kept_at);
    count_sessions(&records, &mut states);
    Ledger {
        records,
        states,
        ignored,
    }
}

fn new_state(r: &Record, status: Status) -> State {
    State {
        status,
        contested_by: Vec::new(),
        established: status == Status::Established,
        kept: status == Status::Established,
        scope: r.scope.clone(),
        advisory: false,
        standing: Standing::default(),
        decided_by: None,
    }
}

/// Which records resets set aside. Read newest first: a reset still in
/// force sets aside every operation from the one it names up to itself, and
/// reading resumes below that point, so a reset inside the range of a later
/// reset is itself set aside.
fn set_aside(records: &[Record]) -> Vec<bool> {
    let mut aside = vec![false; records.len()];
    let mut i = records.len();
    while i > 0 {
        i -= 1;
        let r = &records[i];
        if r.kind != Kind::Reset || r.actor.kind != ActorKind::Person {
            continue;
        }
        let Some(before) = r.before.as_deref() else {
            continue;
        };
        // The first operation at or after `before`.
        let start = records.partition_point(|x| x.id.as_str() < before);
        if start >= i {
            continue;
        }
        aside[start..i].iter_mut().for_each(|a| *a = true);
        i = start;
    }
    aside
}

/// A term rule's forms, for disagreement checks.
struct TermView<'a> {
    at: usize,
    preferred: &'a str,
    avoid: &'a [String],
    /// An entry of an imported file: its import is never contested by it.
    imported: bool,
}

fn avoids(rule: &TermView<'_>, text: &str) -> bool {
    rule.avoid
        .iter()
        .any(|a| form_matches(a, rule.preferred, text))
}

fn disagree(a: &TermView<'_>, b: &TermView<'_>) -> bool {
    if avoids(a, b.preferred) || avoids(b, a.preferred) {
        return true;
    }
    if a.preferred == b.preferred {
        return false;
    }
    a.avoid.iter().any(|x| {
        b.avoid.iter().any(|y| {
            let exact = is_case_only(x, a.preferred) || is_case_only(y, b.preferred);
            if exact {
                x == y
            } else {
                case_key(x) == case_key(y)
            }
        })
    })
}

/// Mark disagreements between rules that answer and can apply at one point
/// and instant. Only rules sharing a form are compared.
fn mark_disagreements(
    records: &[Record],
    states: &mut [Option<Box<State>>],
    kept_at: &[Option<usize>],
) {
    let mut rules: Vec<TermView<'_>> = Vec::new();
    for (at, r) in records.iter().enumerate() {
        let live = states[at]
            .as_ref()
            .is_some_and(|s| matches!(s.status, Status::Suggested | Status::Established));
        if !live {
            continue;
        }
        match (&r.subject, &r.correction) {
            (Some(Subject::Term { preferred, avoid }), _) => rules.push(TermView {
                at,
                preferred,
                avoid,
                imported: false,
            }),
            (Some(Subject::Terms { terms }), _) => {
                for t in terms.iter().filter(|t| !t.suggested) {
                    let preferred = t.preferred.as_deref().unwrap_or("");
                    rules.push(TermView {
                        at,
                        preferred,
                        avoid: &t.avoid,
                        imported: true,
                    });
                }
            }
            // A correction stating no rule still states one wording over another.
            (None, Some(c)) => rules.push(TermView {
                at,
                preferred: &c.to,
                avoid: std::slice::from_ref(&c.from),
                imported: false,
            }),
            _ => {}
        }
    }
    let mut by_form: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, rule) in rules.iter().enumerate() {
        let mut keys: BTreeSet<String> = rule.avoid.iter().map(|a| case_key(a)).collect();
        keys.insert(case_key(rule.preferred));
        for key in keys {
            by_form.entry(key).or_default().push(i);
        }
    }
    let mut pairs = BTreeSet::new();
    for members in by_form.values() {
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                pairs.insert((i.min(j), i.max(j)));
            }
        }
    }
    // Statuses before any contest is marked, so the result does not depend
    // on the order pairs are visited in.
    let established: Vec<bool> = rules
        .iter()
        .map(|r| {
            states[r.at]
                .as_ref()
                .is_some_and(|s| s.status == Status::Established)
        })
        .collect();
    let mut named: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, j) in pairs {
        let (a, b) = (&rules[i], &rules[j]);
        if a.at == b.at {
            continue;
        }
        let scope = |at: usize| &states[at].as_ref().expect("rules have states").scope;
        if !disagree(a, b) || !scope(a.at).overlaps(scope(b.at)) {
            continue;
        }
        // A person's correction reverses an established rule unless a person
        // kept the rule again after it.
        let reverses = |rule: usize, other: usize| {
            let o = &records[other];
            o.kind == Kind::Correct
                && o.actor.kind == ActorKind::Person
                && kept_at[rule].unwrap_or(0) < other
        };
        let (contest_a, contest_b) = match (established[i], established[j]) {
            (true, false) => (reverses(a.at, b.at), true),
            (false, true) => (true, reverses(b.at, a.at)),
            _ => (true, true),
        };
        // A file a person imported stays in force as a whole; what disagrees
        // with one of its rules is contested by it.
        let (contest_a, contest_b) = (contest_a && !a.imported, contest_b && !b.imported);
        if contest_a {
            named.entry(a.at).or_default().insert(b.at);
        }
        if contest_b {
            named.entry(b.at).or_default().insert(a.at);
        }
    }
    for (at, others) in named {
        let s = states[at].as_mut().expect("rules have states");
        s.contested_by = others.into_iter().map(|o| records[o].id.clone()).collect();
        s.status = Status::Contested;
        s.established = false;
    }
}

/// Standing: how many parties recorded the same rule (same form to use and
/// a form to avoid in common) while it answers.
fn count_sessions(records: &[Record], states: &mut [Option<Box<State>>]) {
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (at, r) in records.iter().enumerate() {
        if let (Some(Subject::Term { preferred, .. }), Some(s)) = (&r.subject, &states[at])
            && s.status.answers()
        {
            groups.entry(preferred.as_str()).or_default().push(at);
        }
    }
    for members in groups.values() {
        for &at in members {
            let Some(Subject::Term { avoid, preferred }) = &records[at].subject else {
                continue;
            };
            let parties: BTreeSet<(ActorKind, &str, Option<&str>)> = members
                .iter()
                .map(|&o| &records[o])
                .filter(|o| {
                    matches!(&o.subject, Some(Subject::Term { avoid: oa, .. })
                        if oa.iter().any(|x| avoid.iter().any(|y| form_matches(y, preferred, x))))
                })
                .map(|o| {
                    (
                        o.actor.kind,
                        o.actor.name.as_str(),
                        o.actor.session.as_deref(),
                    )
                })
                .collect();
            if let Some(s) = states[at].as_mut() {
                s.standing.sessions = parties.len().max(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::Actor;

    fn op(n: u64, kind: Kind, actor: ActorKind) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        let actor = Actor {
            kind: actor,
            name: "x".into(),
            session: Some("s".into()),
        };
        Record {
            id: id.to_string(),
            at: id.instant(),
            ..Record::new("p", actor, kind)
        }
    }

    fn note(n: u64, text: &str) -> Record {
        Record {
            subject: Some(Subject::Note { text: text.into() }),
            ..op(n, Kind::Observe, ActorKind::Agent)
        }
    }

    fn reset(n: u64, before: &Record) -> Record {
        Record {
            before: Some(before.id.clone()),
            ..op(n, Kind::Reset, ActorKind::Person)
        }
    }

    #[test]
    fn a_reset_sets_aside_from_its_point_and_a_later_reset_takes_it_back() {
        let a = note(1, "a");
        let b = note(2, "b");
        let keep_b = Record {
            target: Some(b.id.clone()),
            ..op(3, Kind::Keep, ActorKind::Person)
        };
        let r1 = reset(4, &b);
        let c = note(5, "c");
        let status =
            |records: Vec<Record>, of: &Record| fold(records).state(&of.id).map(|s| s.status);

        let log = vec![a.clone(), b.clone(), keep_b.clone(), r1.clone(), c.clone()];
        assert_eq!(status(log.clone(), &a), Some(Status::Suggested));
        assert_eq!(
            status(log.clone(), &b),
            Some(Status::Reset),
            "b and its keep are set aside"
        );
        assert_eq!(
            status(log.clone(), &c),
            Some(Status::Suggested),
            "what follows the reset answers"
        );

        // A reset to before the first reset sets it aside, and with it
        // everything from its point: b answers again, as kept.
        let r2 = reset(6, &r1);
        let log = vec![a.clone(), b.clone(), keep_b, r1, c.clone(), r2];
        assert_eq!(status(log.clone(), &b), Some(Status::Established));
        assert_eq!(status(log.clone(), &c), Some(Status::Reset));

        // An agent's reset is refused and sets nothing aside.
        let forged = Record {
            actor: Actor {
                kind: ActorKind::Agent,
                name: "x".into(),
                session: None,
            },
            ..reset(7, &a)
        };
        let ledger = fold(vec![a.clone(), forged.clone()]);
        assert_eq!(
            ledger.state(&a.id).map(|s| s.status),
            Some(Status::Suggested)
        );
        assert!(ledger.ignored.iter().any(|i| i.id == forged.id));
    }

    #[test]
    fn one_operation_per_content_address_and_the_older_id_stands() {
        let older = Record {
            address: Some("sha256:x".into()),
            ..note(1, "from one machine")
        };
        let younger = Record {
            address: Some("sha256:x".into()),
            ..note(2, "from another")
        };
        let ledger = fold(vec![younger.clone(), older.clone()]);
        assert!(ledger.get(&older.id).is_some());
        assert!(ledger.get(&younger.id).is_none());
        assert!(
            ledger
                .ignored
                .iter()
                .any(|i| i.id == younger.id && i.reason.contains("content address"))
        );
    }
}
