//! The fold: replay the log in id order and give every subject its status.
//!
//! `fold` is a pure function of the records it is given. It applies the
//! set-asides of resets, re-checks every operation against the policy (a
//! remote can push anything: what the policy refuses is ignored and listed),
//! applies people's decisions and the establishments settling recorded, and
//! then marks disagreements. Every reader calls it, so they agree.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::forms::{fold as fold_case, form_matches, is_case_only};
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
    /// The state of each subject-bearing record, by id.
    pub states: HashMap<String, State>,
    pub ignored: Vec<Ignored>,
    index: HashMap<String, usize>,
}

impl Ledger {
    pub fn get(&self, id: &str) -> Option<&Record> {
        self.index.get(id).map(|&i| &self.records[i])
    }

    pub fn state(&self, id: &str) -> Option<&State> {
        self.states.get(id)
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
        self.records.iter().filter_map(move |r| {
            let state = self.states.get(&r.id)?;
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
    records.sort_by(|a, b| a.id.cmp(&b.id));
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
    let index: HashMap<String, usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.clone(), i))
        .collect();
    let set_aside = set_aside(&records, &index);

    let mut states: HashMap<String, State> = HashMap::new();
    let mut kept_at: HashMap<String, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let target = r
            .target
            .as_ref()
            .and_then(|t| index.get(t))
            .map(|&ti| &records[ti]);
        let transition = Transition {
            actor: &r.actor,
            kind: r.kind,
            target,
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
                states.insert(r.id.clone(), new_state(r, Status::Reset));
            }
            continue;
        }
        if r.has_subject() && !r.kind.needs_target() {
            let status = if matches!(r.kind, Kind::Import | Kind::Edit) {
                Status::Established
            } else {
                Status::Suggested
            };
            states.insert(r.id.clone(), new_state(r, status));
            if status == Status::Established {
                kept_at.insert(r.id.clone(), i);
            }
            continue;
        }
        let Some(target_id) = r.target.as_deref() else {
            continue;
        };
        let Some(state) = states.get_mut(target_id) else {
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
                decide(state, Status::Established);
                kept_at.insert(target_id.to_owned(), i);
            }
            Kind::Drop => decide(state, Status::Dropped),
            Kind::Withdraw if state.status == Status::Suggested => decide(state, Status::Withdrawn),
            Kind::Withdraw => ignored.push(Ignored {
                id: r.id.clone(),
                reason: format!(
                    "#{} is no longer a suggestion ({})",
                    &target_id[..10],
                    state.status.as_str()
                ),
            }),
            Kind::Establish if state.status == Status::Suggested => {
                decide(state, Status::Established);
                kept_at.insert(target_id.to_owned(), i);
            }
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

    mark_disagreements(&records, &mut states, &kept_at, &index);
    count_sessions(&records, &index, &mut states);
    Ledger {
        records,
        states,
        ignored,
        index,
    }
}

fn new_state(r: &Record, status: Status) -> State {
    State {
        status,
        contested_by: Vec::new(),
        established: status == Status::Established,
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
fn set_aside(records: &[Record], index: &HashMap<String, usize>) -> Vec<bool> {
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
        // The first operation at or after `before` (it may have been named by a prefix of time).
        let start = index
            .get(before)
            .copied()
            .unwrap_or_else(|| records.partition_point(|x| x.id.as_str() < before));
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
    id: &'a str,
    preferred: &'a str,
    avoid: &'a [String],
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
                fold_case(x) == fold_case(y)
            }
        })
    })
}

/// Mark disagreements between rules that answer and can apply at one point
/// and instant. Only rules sharing a form are compared.
fn mark_disagreements(
    records: &[Record],
    states: &mut HashMap<String, State>,
    kept_at: &HashMap<String, usize>,
    index: &HashMap<String, usize>,
) {
    let mut rules: Vec<(TermView<'_>, &Record)> = Vec::new();
    for r in records {
        let live = states
            .get(&r.id)
            .is_some_and(|s| matches!(s.status, Status::Suggested | Status::Established));
        if !live {
            continue;
        }
        match (&r.subject, &r.correction) {
            (Some(Subject::Term { preferred, avoid }), _) => {
                rules.push((
                    TermView {
                        id: &r.id,
                        preferred,
                        avoid,
                    },
                    r,
                ));
            }
            // A correction stating no rule still states one wording over another.
            (None, Some(c)) => rules.push((
                TermView {
                    id: &r.id,
                    preferred: &c.to,
                    avoid: std::slice::from_ref(&c.from),
                },
                r,
            )),
            _ => {}
        }
    }
    let mut by_form: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (rule, _)) in rules.iter().enumerate() {
        let mut keys: BTreeSet<String> = rule.avoid.iter().map(|a| fold_case(a)).collect();
        keys.insert(fold_case(rule.preferred));
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
    let mut contested: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (i, j) in pairs {
        let (a, ra) = &rules[i];
        let (b, rb) = &rules[j];
        if !disagree(a, b) || !states[a.id].scope.overlaps(&states[b.id].scope) {
            continue;
        }
        let a_est = states[a.id].status == Status::Established;
        let b_est = states[b.id].status == Status::Established;
        let reversal = |rule: &Record, rule_id: &str, other: &Record| {
            // A person's correction reverses an established rule unless a
            // person kept the rule again after it.
            other.kind == Kind::Correct
                && other.actor.kind == ActorKind::Person
                && kept_at.get(rule_id).copied().unwrap_or(0) < index[&other.id]
                && rule.id != other.id
        };
        let (contest_a, contest_b) = match (a_est, b_est) {
            (true, false) => (reversal(ra, a.id, rb), true),
            (false, true) => (true, reversal(rb, b.id, ra)),
            _ => (true, true),
        };
        if contest_a {
            contested.entry(a.id).or_default().insert(b.id);
        }
        if contest_b {
            contested.entry(b.id).or_default().insert(a.id);
        }
        // The other side names the contester even when it stays in force.
        if !contest_a {
            contested.entry(b.id).or_default().insert(a.id);
        }
    }
    for (id, others) in contested {
        let state = states.get_mut(id).expect("rules come from states");
        state.status = Status::Contested;
        state.established = false;
        state.contested_by = others.into_iter().map(str::to_owned).collect();
    }
}

/// Standing: how many parties recorded the same rule (same form to use and
/// a form to avoid in common) while it answers.
fn count_sessions(
    records: &[Record],
    index: &HashMap<String, usize>,
    states: &mut HashMap<String, State>,
) {
    let mut groups: BTreeMap<&str, Vec<(&Record, String)>> = BTreeMap::new();
    for r in records {
        if let (Some(Subject::Term { preferred, .. }), Some(s)) = (&r.subject, states.get(&r.id))
            && s.status.answers()
        {
            let party = format!(
                "{:?}|{}|{}",
                r.actor.kind,
                r.actor.name,
                r.actor.session.as_deref().unwrap_or("")
            );
            groups
                .entry(preferred.as_str())
                .or_default()
                .push((r, party));
        }
    }
    for members in groups.values() {
        for (rule, _) in members {
            let Some(Subject::Term { avoid, preferred }) = &rule.subject else {
                continue;
            };
            let parties: BTreeSet<&str> = members
                .iter()
                .filter(|(other, _)| {
                    matches!(&other.subject, Some(Subject::Term { avoid: oa, .. })
                        if oa.iter().any(|x| avoid.iter().any(|y| form_matches(y, preferred, x))))
                })
                .map(|(_, p)| p.as_str())
                .collect();
            debug_assert!(index.contains_key(&rule.id));
            if let Some(s) = states.get_mut(&rule.id) {
                s.standing.sessions = parties.len().max(1);
            }
        }
    }
}
