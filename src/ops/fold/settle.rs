//! Settling: suggestions settle by evidence, inside the fold, after every
//! person's decision and before disagreements are marked.
//!
//! Suggestions that state one rule (the same form to use, a form to avoid
//! in common, at points that meet) form a group. Each member is settled on
//! the person signals seen where it holds:
//!
//! | evidence                                             | effect        |
//! |------------------------------------------------------|---------------|
//! | a correction toward it (a person's, or an agent's record of a person's change in another session) | person signal |
//! | a merge signal naming it                             | person signal |
//! | another session recording it, usage, applied edits   | standing only |
//! | a correction away from it                            | against       |
//! | its author withdrawing a member of the group         | against       |
//! | usage moving to an avoided form after it was counted | against       |
//!
//! A member with a person signal and nothing against it is established; with
//! both, it is contested by the evidence against it; with a rival rule that
//! disagrees with it, it stays a suggestion and the disagreement pass
//! contests it. Time alone settles nothing; a correction is not evidence for
//! the rule it carries itself; a session does not vouch for itself (an
//! agent's correction is no person signal for a suggestion of its own
//! session); a person's drop of a member sets aside the
//! evidence gathered before it; a suggestion that names no file has no
//! place and is never established by settling. An `establish` operation
//! binds only while the evidence it names still holds: the fold reads the
//! evidence again on every read, so the outcome does not depend on the
//! order logs were merged in.
//!
//! What settling leaves to record (the establishments due, with their
//! content addresses) is read from the folded ledger by `ops/settle.rs`.

use std::collections::{BTreeMap, BTreeSet};

use super::disagree::{TermView, disagree, meet, term_views};
use super::state::{State, Status};
use crate::ops::axes::Axes;
use crate::ops::forms::{case_key, writes_avoided, writes_preferred};
use crate::ops::id::OpId;
use crate::ops::op::{Op, Stated};
use crate::ops::record::{ActorKind, Kind, Record, Scope, SignalSource};

/// The most person signals an establishment names.
pub const MAX_BECAUSE: usize = 16;

/// A status settling changed: the member, the operation whose evidence
/// decided it, and the new status.
pub(super) type Settled = (usize, usize, Status);

/// One term rule the pass compares, with where it holds.
struct Member<'r> {
    at: usize,
    preferred: &'r str,
    avoid: &'r [String],
    keys: BTreeSet<String>,
}

impl Member<'_> {
    /// The same rule: the same form to use and a form to avoid in common
    /// (scopes are compared by the caller).
    fn same_rule(&self, other: &Member<'_>) -> bool {
        self.preferred == other.preferred && !self.keys.is_disjoint(&other.keys)
    }
}

fn member<'r>(records: &'r [Record], at: usize) -> Option<Member<'r>> {
    match Op::of(&records[at]).ok()?.stated() {
        Stated::Term { preferred, avoid } => Some(Member {
            at,
            preferred,
            avoid,
            keys: avoid.iter().map(|a| case_key(a)).collect(),
        }),
        _ => None,
    }
}

/// Whether `correction` is an agent's account of a change made in the
/// session that suggested `suggestion`: both by agents, in the same
/// session, or by the same agent where either names no session (it cannot
/// be told apart). Such a correction is no person signal for it: a session
/// does not vouch for itself. Another session of the same agent is another
/// party, as for a withdrawal, and its correction counts (at the door kapi
/// checked that git shows the change).
fn vouches_for_itself(correction: &Record, suggestion: &Record) -> bool {
    let (by, of) = (&correction.actor, &suggestion.actor);
    if by.kind != ActorKind::Agent || of.kind != ActorKind::Agent {
        return false;
    }
    match (&by.session, &of.session) {
        (Some(a), Some(b)) => a == b,
        _ => by.name == of.name,
    }
}

/// Drift: an established rule whose latest usage count writes an avoided
/// form more often than the count taken when it came into force (the latest
/// at or before that point, else the first after it).
///
/// A count covers the files the rule held for when it was taken, so only
/// counts taken over the files it holds for now compare: those after its
/// latest widening (`widened`). A rule widened to the project counts more
/// files than it did; that is no drift, and the first count at the new
/// scope is the one later counts are compared with.
fn mark_drift(
    records: &[Record],
    signals: &BTreeMap<usize, Vec<usize>>,
    widened: &BTreeMap<usize, usize>,
    states: &mut [Option<Box<State>>],
    kept_at: &[Option<usize>],
) {
    for (&target, at) in signals {
        let Some(state) = states[target].as_mut() else {
            continue;
        };
        if state.status != Status::Established {
            continue;
        }
        let since = kept_at[target].unwrap_or(target);
        let scoped = widened.get(&target).copied();
        let usage: Vec<(usize, u64)> = at
            .iter()
            .filter(|&&s| scoped.is_none_or(|w| s > w))
            .filter_map(|&s| {
                let signal = records[s].signal.as_deref()?;
                (signal.source == SignalSource::Usage).then_some((s, signal.avoided))
            })
            .collect();
        let baseline = usage
            .iter()
            .rev()
            .find(|(s, _)| *s <= since)
            .or_else(|| usage.iter().find(|(s, _)| *s > since));
        if let (Some(&(b, then)), Some(&(l, now))) = (baseline, usage.last())
            && l > b
            && now > then
        {
            state.drift = Some((then, now));
        }
    }
}

/// Settle the suggestions over the applied records. `evidence` holds the
/// positions of the signals, establishes and widenings the fold applied,
/// in order: indexed by the rule each names ([`Applied`]), they mark drift;
/// then settling goes in three steps: the groups ([`Groups::of`]: which
/// suggestions settle, and what each is compared with), the evidence for
/// and against each member ([`Groups::evidence`]), and its verdict
/// ([`verdict`], written by [`record_verdict`]).
pub(super) fn settle(
    records: &[Record],
    keys: &[u128],
    evidence: &[usize],
    states: &mut [Option<Box<State>>],
    kept_at: &mut [Option<usize>],
    axes: &Axes,
) -> Vec<Settled> {
    let applied = Applied::index(records, keys, evidence);
    mark_drift(records, &applied.signals, &applied.widened, states, kept_at);
    let Some(groups) = Groups::of(records, keys, states) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    for m in &groups.members {
        let found = groups.evidence(m, records, states, axes, &applied.signals);
        let outcome = verdict(&found, &records[m.at], || {
            groups.rival(m, |at| meet(records, states, axes, m.at, at))
        });
        changed.extend(record_verdict(
            m,
            found,
            outcome,
            &applied.establishes,
            records,
            states,
            kept_at,
        ));
    }
    changed
}

/// The evidence the fold applied, by the position of the rule it names.
struct Applied {
    /// Signals naming each rule, in log order.
    signals: BTreeMap<usize, Vec<usize>>,
    /// Establishes naming each rule, in log order.
    establishes: BTreeMap<usize, Vec<usize>>,
    /// Each rule's latest widening.
    widened: BTreeMap<usize, usize>,
}

impl Applied {
    /// Index the signals, establishes and widenings at `evidence` by the
    /// rule each names (one the log does not hold is passed over).
    fn index(records: &[Record], keys: &[u128], evidence: &[usize]) -> Applied {
        let position = |id: &OpId| keys.binary_search(&id.key()).ok();
        let mut applied = Applied {
            signals: BTreeMap::new(),
            establishes: BTreeMap::new(),
            widened: BTreeMap::new(),
        };
        for &at in evidence {
            match Op::of(&records[at]) {
                Ok(Op::Widen { target, .. }) => {
                    if let Some(t) = position(&target) {
                        applied.widened.insert(t, at);
                    }
                }
                Ok(Op::Signal { target, .. }) => {
                    if let Some(t) = position(&target) {
                        applied.signals.entry(t).or_default().push(at);
                    }
                }
                Ok(Op::Establish { target, .. }) => {
                    if let Some(t) = position(&target) {
                        applied.establishes.entry(t).or_default().push(at);
                    }
                }
                _ => {}
            }
        }
        applied
    }
}

/// The first step: the suggestions to settle, and what each is compared
/// with.
struct Groups<'r> {
    /// Suggestions no person kept that state a term rule.
    members: Vec<Member<'r>>,
    /// Corrections that still answer, by a person or an agent recording
    /// what a person changed.
    corrections: Vec<usize>,
    /// Rules a person dropped or an author withdrew, with where that
    /// happened: the members of a group that were set aside.
    set_aside: Vec<(Member<'r>, usize, Status)>,
    /// The rules that answer ([`term_views`], in log order), and each
    /// form's rules (by case key): the rivals a member may disagree with.
    rules: Vec<TermView<'r>>,
    by_form: BTreeMap<String, Vec<usize>>,
}

impl<'r> Groups<'r> {
    /// Gather the members and what they are compared with; `None` when no
    /// suggestion is left to settle.
    fn of(records: &'r [Record], keys: &[u128], states: &[Option<Box<State>>]) -> Option<Self> {
        let status = |at: usize| states[at].as_ref().map(|s| s.status);
        let position = |id: &OpId| keys.binary_search(&id.key()).ok();
        let members: Vec<Member<'_>> = (0..states.len())
            .filter(|&at| {
                states[at]
                    .as_ref()
                    .is_some_and(|s| s.status == Status::Suggested && !s.kept)
            })
            .filter_map(|at| member(records, at))
            .collect();
        if members.is_empty() {
            return None;
        }
        let corrections: Vec<usize> = (0..states.len())
            .filter(|&at| {
                let r = &records[at];
                r.kind == Kind::Correct
                    && matches!(r.actor.kind, ActorKind::Person | ActorKind::Agent)
                    && status(at).is_some_and(Status::answers)
            })
            .collect();
        let set_aside: Vec<(Member<'_>, usize, Status)> = (0..states.len())
            .filter_map(|at| {
                let s = states[at].as_ref()?;
                if !matches!(s.status, Status::Dropped | Status::Withdrawn) {
                    return None;
                }
                let by = position(s.decided_by.as_ref()?)?;
                Some((member(records, at)?, by, s.status))
            })
            .collect();
        let rules = term_views(records, states);
        let mut by_form: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, rule) in rules.iter().enumerate() {
            for key in rule
                .avoid
                .iter()
                .map(|a| case_key(a))
                .chain([case_key(rule.preferred)])
            {
                by_form.entry(key).or_default().push(i);
            }
        }
        Some(Groups {
            members,
            corrections,
            set_aside,
            rules,
            by_form,
        })
    }

    /// The second step: the evidence for and against `m`, since a person
    /// last dropped a rule of its group (a drop sets aside what came
    /// before it).
    fn evidence(
        &self,
        m: &Member<'_>,
        records: &[Record],
        states: &[Option<Box<State>>],
        axes: &Axes,
        signals: &BTreeMap<usize, Vec<usize>>,
    ) -> Evidence {
        let overlaps = |at: usize| meet(records, states, axes, m.at, at);
        let since = self
            .set_aside
            .iter()
            .filter(|(o, _, st)| *st == Status::Dropped && o.same_rule(m) && overlaps(o.at))
            .map(|&(_, by, _)| by + 1)
            .max()
            .unwrap_or(0);
        let mut found = Evidence {
            toward: Vec::new(),
            against: Vec::new(),
            merged_in: Vec::new(),
        };
        let scope = &states[m.at].as_ref().expect("members have states").scope;
        let corrections = self.corrections.iter().copied();
        found.corrections(
            m,
            records,
            scope,
            axes,
            corrections.filter(|&c| c >= since && c != m.at),
        );
        let signals = signals.get(&m.at).into_iter().flatten().copied();
        found.signals(records, signals.filter(|&s| s >= since));
        // Its author withdrawing a member of its group.
        for (o, by, st) in &self.set_aside {
            if *st == Status::Withdrawn && *by >= since && o.same_rule(m) && overlaps(o.at) {
                found.against.push(*by);
            }
        }
        found.toward.sort_unstable();
        found.toward.dedup();
        found.against.sort_unstable();
        found.against.dedup();
        found
    }

    /// Whether a rule that answers disagrees with `m` where it holds
    /// (`overlaps`: whether the rule at a position meets `m`).
    fn rival(&self, m: &Member<'_>, overlaps: impl Fn(usize) -> bool) -> bool {
        let rules = &self.rules;
        // `rules` is in log order: find the member's own by position.
        let Some(mine) = rules
            .get(rules.partition_point(|r| r.at < m.at))
            .filter(|r| r.at == m.at)
        else {
            return false;
        };
        let candidates: BTreeSet<usize> = m
            .avoid
            .iter()
            .map(|a| case_key(a))
            .chain([case_key(m.preferred)])
            .filter_map(|k| self.by_form.get(&k))
            .flatten()
            .copied()
            .collect();
        candidates.into_iter().any(|i| {
            let other: &TermView<'_> = &rules[i];
            other.at != m.at && disagree(mine, other) && overlaps(other.at)
        })
    }
}

/// The second step's answer for one member: positions in the log.
struct Evidence {
    /// Person signals for it: corrections toward it, merges that wrote it.
    toward: Vec<usize>,
    /// Evidence against it: corrections away from it, its group's
    /// withdrawals, usage moving to an avoided form.
    against: Vec<usize>,
    /// The pull requests (or commits) whose merges wrote it.
    merged_in: Vec<String>,
}

impl Evidence {
    /// The corrections at `at` that write toward `m` (person signals, but
    /// for an agent's account of its own session's change) or away from it,
    /// where it holds: in its project, at a point its `scope` covers on the
    /// project's axes (a correction at market: no counts for a rule at
    /// market: nordics).
    fn corrections(
        &mut self,
        m: &Member<'_>,
        records: &[Record],
        scope: &Scope,
        axes: &Axes,
        at: impl Iterator<Item = usize>,
    ) {
        let project = &records[m.at].project;
        let space = axes.space(project);
        for c in at {
            let r = &records[c];
            let Some(correction) = r.correction.as_deref() else {
                continue;
            };
            if r.project != project || !scope.covers_in(space, &r.scope.point) {
                continue;
            }
            let (from, to) = (&correction.from, &correction.to);
            if writes_preferred(to, m.preferred, m.avoid)
                && writes_avoided(from, m.preferred, m.avoid)
                && !writes_avoided(to, m.preferred, m.avoid)
            {
                if !vouches_for_itself(r, &records[m.at]) {
                    self.toward.push(c);
                }
            } else if writes_preferred(from, m.preferred, m.avoid)
                && writes_avoided(to, m.preferred, m.avoid)
                && !writes_preferred(to, m.preferred, m.avoid)
            {
                self.against.push(c);
            }
        }
    }

    /// The signals at `at` (naming the member, in log order): a merge that
    /// wrote it is a person signal; usage counts that write an avoided form
    /// more often than the first did are evidence against it.
    fn signals(&mut self, records: &[Record], at: impl Iterator<Item = usize>) {
        let mut first_usage: Option<u64> = None;
        let mut latest_usage: Option<(usize, u64)> = None;
        for s in at {
            let Some(signal) = records[s].signal.as_deref() else {
                continue;
            };
            match signal.source {
                SignalSource::Merge if signal.preferred > 0 || signal.avoided > 0 => {
                    self.toward.push(s);
                    self.merged_in.push(match (&signal.pr, &signal.commit) {
                        (Some(pr), _) => format!("#{}", pr.trim_start_matches('#')),
                        (None, Some(commit)) => commit.chars().take(7).collect(),
                        (None, None) => "a merge".into(),
                    });
                }
                SignalSource::Usage => {
                    first_usage.get_or_insert(signal.avoided);
                    latest_usage = Some((s, signal.avoided));
                }
                SignalSource::Merge | SignalSource::Applied => {}
            }
        }
        if let (Some(first), Some((at, latest))) = (first_usage, latest_usage)
            && latest > first
        {
            self.against.push(at);
        }
    }
}

/// The third step: what `found` makes of the suggestion `suggested`. No
/// person signal: nothing. Evidence against as well: contested. Otherwise
/// established, when it names a file (a suggestion without one has no
/// place) and no rival rule disagrees with it (`rival`, asked only then:
/// the disagreement pass contests it instead).
fn verdict(found: &Evidence, suggested: &Record, rival: impl FnOnce() -> bool) -> Option<Status> {
    let has_place = suggested.evidence.iter().any(|e| e.path.is_some());
    if found.toward.is_empty() {
        None
    } else if !found.against.is_empty() {
        Some(Status::Contested)
    } else if has_place && !rival() {
        Some(Status::Established)
    } else {
        None
    }
}

/// Write the verdict on `m` into its state: its standing always; for an
/// outcome, its status and what decided it (the evidence against a
/// contested rule; the person signals an established one rests on, and
/// the `establish` that names them, if the log holds one). Returns the
/// change, by the operation whose evidence decided it.
fn record_verdict(
    m: &Member<'_>,
    found: Evidence,
    outcome: Option<Status>,
    establishes: &BTreeMap<usize, Vec<usize>>,
    records: &[Record],
    states: &mut [Option<Box<State>>],
    kept_at: &mut [Option<usize>],
) -> Option<Settled> {
    let Evidence {
        toward,
        against,
        merged_in,
    } = found;
    let ids = |at: &[usize]| -> Vec<OpId> { at.iter().map(|&a| records[a].op_id()).collect() };
    let because = ids(&toward);
    let binding = outcome
        .filter(|&s| s == Status::Established)
        .and_then(|_| {
            establishes.get(&m.at).into_iter().flatten().find(|&&e| {
                records[e]
                    .because
                    .iter()
                    .all(|b| because.iter().any(|t| t.as_str() == b))
            })
        })
        .copied();
    // An establishment names the oldest of the signals it rests on (an
    // operation names at most 256 others; one signal suffices).
    let because: Vec<OpId> = because.into_iter().take(MAX_BECAUSE).collect();
    let state = states[m.at].as_mut().expect("members have states");
    state.standing.toward = toward.len();
    state.standing.against = against.len();
    state.standing.merged_in = merged_in;
    let to = outcome?;
    let by = toward.iter().chain(&against).copied().max().unwrap_or(m.at);
    state.status = to;
    if to == Status::Contested {
        state.contested_by = ids(&against);
    } else {
        state.because = because;
        state.decided_by = binding.map(|e| records[e].op_id());
        kept_at[m.at] = Some(toward.iter().copied().max().unwrap_or(m.at));
    }
    Some((m.at, binding.unwrap_or(by).max(by), to))
}

#[cfg(test)]
mod tests {
    use crate::ops::fold::{Status, fold};
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{
        Actor, ActorKind, Correction, Evidence, Kind, Record, Scope, Signal, SignalSource, Subject,
    };

    fn op(n: u64, kind: Kind, actor: ActorKind, session: &str) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new(
                "p",
                Actor {
                    kind: actor,
                    name: "x".into(),
                    session: Some(session.into()),
                },
                kind,
            )
        }
    }

    fn at(section: &str) -> Scope {
        Scope {
            point: [("section".to_string(), section.to_string())].into(),
            ..Scope::default()
        }
    }

    /// An agent's suggestion of Quickcast over "Quick cast", seen in a file
    /// of `section`.
    fn suggestion(n: u64, section: &str) -> Record {
        Record {
            subject: Some(Subject::Term {
                preferred: "Quickcast".into(),
                avoid: vec!["Quick cast".into(), "Quick-cast".into()],
            }),
            evidence: vec![Evidence {
                path: Some(format!("docs/{section}/a.md")),
                ..Evidence::default()
            }],
            scope: at(section),
            ..op(n, Kind::Observe, ActorKind::Agent, "s1")
        }
    }

    fn correction(n: u64, from: &str, to: &str, section: &str, who: ActorKind) -> Record {
        Record {
            correction: Some(Box::new(Correction {
                from: from.into(),
                to: to.into(),
            })),
            evidence: vec![Evidence {
                path: Some(format!("docs/{section}/b.md")),
                ..Evidence::default()
            }],
            scope: at(section),
            ..op(n, Kind::Correct, who, "s2")
        }
    }

    fn merge(n: u64, target: &Record, preferred: u64) -> Record {
        Record {
            target: Some(target.id.clone()),
            signal: Some(Box::new(Signal {
                source: SignalSource::Merge,
                preferred,
                avoided: 0,
                commit: Some("0123456789abcdef".into()),
                pr: Some("412".into()),
                merger: Some("ada".into()),
            })),
            ..op(n, Kind::Signal, ActorKind::Tool, "ci")
        }
    }

    fn status(records: &[Record], of: &Record) -> Status {
        fold(records.to_vec()).state(&of.id).unwrap().status
    }

    #[test]
    fn a_correction_in_the_help_pages_settles_only_the_help_pages_suggestion() {
        let help = suggestion(1, "help");
        let legal = suggestion(2, "legal");
        let fix = correction(
            3,
            "Open Quick cast",
            "Open Quickcast",
            "help",
            ActorKind::Person,
        );
        let log = vec![help.clone(), legal.clone(), fix.clone()];
        assert_eq!(status(&log, &help), Status::Established);
        assert_eq!(status(&log, &legal), Status::Suggested);
        let ledger = fold(log);
        let state = ledger.state(&help.id).unwrap();
        assert_eq!(state.because, vec![fix.op_id()]);
        assert_eq!(state.standing.toward, 1);
        assert!(state.decided_by.is_none(), "no establish recorded yet");
        // The correction is not evidence for the rule it carries itself.
        let implied = Record {
            subject: help.subject.clone(),
            ..fix.clone()
        };
        assert_eq!(
            status(std::slice::from_ref(&implied), &implied),
            Status::Suggested
        );
    }

    #[test]
    fn a_session_does_not_vouch_for_its_own_suggestion() {
        // The suggestion is the agent x's in session s1.
        let a = suggestion(1, "help");
        let by = |n: u64, name: &str, session: Option<&str>| Record {
            actor: Actor {
                kind: ActorKind::Agent,
                name: name.into(),
                session: session.map(Into::into),
            },
            ..correction(n, "Quick cast", "Quickcast", "help", ActorKind::Agent)
        };
        // Its own session, or the same session under another name.
        for own in [by(2, "x", Some("s1")), by(2, "y", Some("s1"))] {
            let ledger = fold(vec![a.clone(), own]);
            let state = ledger.state(&a.id).unwrap();
            assert_eq!(state.status, Status::Suggested);
            assert_eq!(state.standing.toward, 0);
        }
        // The same agent naming no session cannot show it is another one.
        assert_eq!(
            status(&[a.clone(), by(2, "x", None)], &a),
            Status::Suggested
        );
        let nameless = Record {
            actor: Actor {
                session: None,
                ..a.actor.clone()
            },
            ..a.clone()
        };
        assert_eq!(
            status(&[nameless.clone(), by(2, "x", Some("s2"))], &nameless),
            Status::Suggested
        );
        // Another session of the same agent, or another agent, is another party.
        assert_eq!(
            status(&[a.clone(), by(2, "x", Some("s2"))], &a),
            Status::Established
        );
        assert_eq!(
            status(&[nameless.clone(), by(2, "y", None)], &nameless),
            Status::Established
        );
        // Its own correction away from it still counts against it.
        let toward = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let away = Record {
            actor: a.actor.clone(),
            ..correction(3, "Quickcast", "Quick-cast", "help", ActorKind::Agent)
        };
        assert_eq!(status(&[a.clone(), toward, away], &a), Status::Contested);
    }

    #[test]
    fn time_alone_and_standing_alone_settle_nothing() {
        let a = suggestion(1, "help");
        let again = Record {
            actor: Actor {
                session: Some("s9".into()),
                ..a.actor.clone()
            },
            ..suggestion(50, "help")
        };
        let log = vec![a.clone(), again];
        assert_eq!(status(&log, &a), Status::Suggested);
        assert_eq!(fold(log).state(&a.id).unwrap().standing.sessions, 2);
    }

    #[test]
    fn evidence_for_and_against_contests_and_names_what_stands_against() {
        let a = suggestion(1, "help");
        let toward = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let away = correction(3, "Quickcast", "Quick-cast", "help", ActorKind::Agent);
        let ledger = fold(vec![a.clone(), toward, away.clone()]);
        let state = ledger.state(&a.id).unwrap();
        assert_eq!(state.status, Status::Contested);
        assert_eq!(state.contested_by, vec![away.op_id()]);
    }

    #[test]
    fn a_merge_signal_establishes_the_suggestion_it_names_and_shows_the_pull_request() {
        let a = suggestion(1, "help");
        let b = suggestion(2, "legal");
        let signal = merge(3, &a, 2);
        let ledger = fold(vec![a.clone(), b.clone(), signal]);
        assert_eq!(ledger.state(&a.id).unwrap().status, Status::Established);
        assert_eq!(ledger.state(&b.id).unwrap().status, Status::Suggested);
        let standing = ledger.state(&a.id).unwrap().standing.describe();
        assert!(standing.contains("merged in #412"), "{standing}");
        // A merge that wrote none of it is no signal.
        assert_eq!(status(&[a.clone(), merge(4, &a, 0)], &a), Status::Suggested);
    }

    #[test]
    fn a_suggestion_with_no_place_is_never_settled() {
        let a = Record {
            evidence: vec![Evidence {
                quote: Some("Quick cast".into()),
                ..Evidence::default()
            }],
            ..suggestion(1, "help")
        };
        let log = vec![a.clone(), merge(2, &a, 1)];
        assert_eq!(status(&log, &a), Status::Suggested);
    }

    #[test]
    fn a_drop_sets_aside_the_evidence_gathered_before_it() {
        let a = suggestion(1, "help");
        let fix = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let drop = Record {
            target: Some(a.id.clone()),
            ..op(3, Kind::Drop, ActorKind::Person, "p")
        };
        let b = suggestion(4, "help");
        let log = vec![a.clone(), fix, drop, b.clone()];
        assert_eq!(status(&log, &a), Status::Dropped);
        assert_eq!(status(&log, &b), Status::Suggested);
        let later = correction(5, "Quick-cast", "Quickcast", "help", ActorKind::Person);
        let mut log = log;
        log.push(later);
        assert_eq!(status(&log, &b), Status::Established);
    }

    #[test]
    fn an_establish_binds_only_while_its_evidence_holds() {
        let a = suggestion(1, "help");
        let fix = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let establish = Record {
            target: Some(a.id.clone()),
            because: vec![fix.id.to_string()],
            address: Some("sha256:e".into()),
            ..op(3, Kind::Establish, ActorKind::Tool, "settle")
        };
        let ledger = fold(vec![a.clone(), fix.clone(), establish.clone()]);
        let state = ledger.state(&a.id).unwrap();
        assert_eq!(state.status, Status::Established);
        assert_eq!(state.decided_by, Some(establish.op_id()));
        // The correction dropped: the establish no longer binds.
        let drop_fix = Record {
            target: Some(fix.id.clone()),
            ..op(4, Kind::Drop, ActorKind::Person, "p")
        };
        let log = vec![a.clone(), fix, establish, drop_fix];
        assert_eq!(status(&log, &a), Status::Suggested);
        // An agent's establish is refused by the policy.
        let forged = Record {
            target: Some(a.id.clone()),
            ..op(5, Kind::Establish, ActorKind::Agent, "s1")
        };
        let ledger = fold(vec![a.clone(), forged.clone()]);
        assert!(ledger.ignored.iter().any(|i| i.id == forged.id));
        assert_eq!(ledger.state(&a.id).unwrap().status, Status::Suggested);
    }

    #[test]
    fn a_rival_rule_leaves_both_contested_for_a_person() {
        let a = suggestion(1, "help");
        let rival = Record {
            subject: Some(Subject::Term {
                preferred: "QuickCast".into(),
                avoid: vec!["Quick cast".into()],
            }),
            ..suggestion(2, "help")
        };
        let fix = correction(3, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let ledger = fold(vec![a.clone(), rival.clone(), fix]);
        assert_eq!(ledger.state(&a.id).unwrap().status, Status::Contested);
        assert_eq!(
            ledger.state(&a.id).unwrap().contested_by,
            vec![rival.op_id()]
        );
    }

    mod merge_order {
        use super::*;
        use crate::ops::fold::Ledger;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Gen {
            Suggest(bool),
            Toward(bool, bool),
            Away(bool),
            Merge(usize, u64),
            Drop(usize),
        }

        fn operation() -> impl Strategy<Value = Gen> {
            prop_oneof![
                3 => any::<bool>().prop_map(Gen::Suggest),
                2 => (any::<bool>(), any::<bool>()).prop_map(|(h, p)| Gen::Toward(h, p)),
                1 => any::<bool>().prop_map(Gen::Away),
                1 => (0usize..16, 0u64..2).prop_map(|(t, n)| Gen::Merge(t, n)),
                1 => (0usize..16).prop_map(Gen::Drop),
            ]
        }

        fn build(gens: &[Gen]) -> Vec<Record> {
            let mut out: Vec<Record> = Vec::new();
            for (n, g) in gens.iter().enumerate() {
                let n = n as u64 + 1;
                let section = |help: bool| if help { "help" } else { "legal" };
                let pick = |t: usize, out: &[Record]| {
                    let rules: Vec<&Record> =
                        out.iter().filter(|r| r.kind == Kind::Observe).collect();
                    (!rules.is_empty()).then(|| rules[t % rules.len()].clone())
                };
                let r = match g {
                    Gen::Suggest(help) => suggestion(n, section(*help)),
                    Gen::Toward(help, person) => correction(
                        n,
                        "Quick cast",
                        "Quickcast",
                        section(*help),
                        if *person {
                            ActorKind::Person
                        } else {
                            ActorKind::Agent
                        },
                    ),
                    Gen::Away(help) => correction(
                        n,
                        "Quickcast",
                        "Quick-cast",
                        section(*help),
                        ActorKind::Person,
                    ),
                    Gen::Merge(t, p) => match pick(*t, &out) {
                        Some(target) => merge(n, &target, *p),
                        None => suggestion(n, "help"),
                    },
                    Gen::Drop(t) => match pick(*t, &out) {
                        Some(target) => Record {
                            target: Some(target.id.clone()),
                            ..op(n, Kind::Drop, ActorKind::Person, "p")
                        },
                        None => suggestion(n, "legal"),
                    },
                };
                out.push(r);
            }
            out
        }

        /// The establish records one machine's settling adds, minted after
        /// everything it holds.
        fn settled(records: &[Record], machine: u64) -> Vec<Record> {
            crate::ops::settle::due(&fold(records.to_vec()))
                .into_iter()
                .enumerate()
                .map(|(k, d)| Record {
                    target: Some(d.target.to_string().into()),
                    because: d.because.iter().map(|b| b.to_string()).collect(),
                    address: Some(d.address),
                    ..op(
                        1000 + 10 * k as u64 + machine,
                        Kind::Establish,
                        ActorKind::Tool,
                        "settle",
                    )
                })
                .collect()
        }

        fn statuses(ledger: &Ledger) -> Vec<(String, Status)> {
            ledger
                .iter()
                .filter_map(|(r, s)| Some((r.id.to_string(), s?.status)))
                .collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

            /// Two machines each hold part of a log and settle it; merged in
            /// either order, with either machine's establishes, the fold
            /// answers as the union's evidence says, and settling the merged
            /// log again records nothing new for what already binds.
            #[test]
            fn settling_does_not_depend_on_merge_order(
                gens in proptest::collection::vec(operation(), 1..24),
                split in proptest::collection::vec(any::<bool>(), 24),
            ) {
                let records = build(&gens);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (i, r) in records.iter().enumerate() {
                    if split[i] { a.push(r.clone()) } else { b.push(r.clone()) }
                }
                let (ea, eb) = (settled(&a, 1), settled(&b, 2));
                let evidence_alone = statuses(&fold(records.clone()));
                let mut ab: Vec<Record> = a.iter().chain(&ea).chain(&b).chain(&eb).cloned().collect();
                let ab_fold = fold(ab.clone());
                ab.reverse();
                let ba_fold = fold(ab);
                let subjects = |s: Vec<(String, Status)>| -> Vec<(String, Status)> {
                    s.into_iter().filter(|(id, _)| records.iter().any(|r| r.id == id)).collect()
                };
                prop_assert_eq!(subjects(statuses(&ab_fold)), subjects(statuses(&ba_fold)));
                prop_assert_eq!(subjects(statuses(&ab_fold)), evidence_alone);
                // What is due after merging: only establishments whose
                // evidence neither side's establish named.
                for d in crate::ops::settle::due(&ab_fold) {
                    let named = ea.iter().chain(&eb).any(|e| {
                        e.target.as_deref() == Some(d.target.as_str())
                            && e.because.iter().all(|x| d.because.iter().any(|y| y.as_str() == x))
                    });
                    prop_assert!(!named, "{:?} is due though an establish names it", d);
                }
            }
        }
    }
}
