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

/// What establishes a suggestion besides a person's keep: `[context]
/// settle` in kapi.toml. Every reader folds with the project's setting
/// (`Ledger::with_settling`), so they agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Settling {
    /// A person's signal settles it: a correction toward it where it holds,
    /// or the change reaching the default branch (a merge signal).
    #[default]
    Evidence,
    /// Only a person's keep: every suggestion stays a suggestion until a
    /// person keeps it, whatever the evidence (its standing still counts
    /// it), and settling records no `establish`.
    KeepOnly,
}

impl Settling {
    pub fn as_str(self) -> &'static str {
        match self {
            Settling::Evidence => "evidence",
            Settling::KeepOnly => "keep-only",
        }
    }
}

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

/// The content address of an establishment: its target and its evidence,
/// each piece of evidence by what it is: its own content address when it
/// has one (a merge signal's covers the suggestion, the commit and the
/// counts), else its id. Two machines that each counted one merge record
/// two signals with one address under two ids (the fold takes the older);
/// an establishment resting on either is then one operation too, whichever
/// machine settled first.
pub fn establish_address(target: &OpId, evidence: &[&str]) -> String {
    let mut text = format!("establish\n{}\n", target.as_str());
    let mut keys: Vec<&str> = evidence.to_vec();
    keys.sort_unstable();
    for key in keys {
        text.push_str(key);
        text.push('\n');
    }
    format!("sha256:{}", crate::digest::sha256_hex(text.as_bytes()))
}

/// What one piece of evidence is, for an establishment's address: its
/// content address, else its id.
pub(in crate::ops) fn evidence_key(record: &Record) -> &str {
    record.address.as_deref().unwrap_or(&record.id)
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
/// ([`verdict`], written by [`record_verdict`]). With
/// [`Settling::KeepOnly`] the evidence is counted (standing, drift) and no
/// status changes.
///
/// `Ledger::alone` (fold/checkpoint.rs) restates which suggestions this
/// pass can never touch (a term rule sharing no form, by case key, with
/// any subject, that no correction writes toward or away from): a new way
/// for a rule to meet another here must be added there too, or the
/// reader's view takes a suggestion this pass would have changed (the
/// checkpoint property test in `context/tests.rs` compares the two).
pub(super) fn settle(
    records: &[Record],
    keys: &[u128],
    evidence: &[usize],
    states: &mut [Option<Box<State>>],
    kept_at: &mut [Option<usize>],
    axes: &Axes,
    settling: Settling,
) -> Vec<Settled> {
    let applied = Applied::index(records, keys, evidence);
    mark_drift(records, &applied.signals, &applied.widened, states, kept_at);
    let Some(groups) = Groups::of(records, keys, states) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    for m in &groups.members {
        let found = groups.evidence(m, records, states, axes, &applied.signals);
        let outcome = verdict(&found, &records[m.at], settling, || {
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
/// person signal (or a project that keeps every rule by hand): nothing.
/// Evidence against as well: contested. Otherwise established, when it
/// names a file (a suggestion without one has no place) and no rival rule
/// disagrees with it (`rival`, asked only then: the disagreement pass
/// contests it instead).
fn verdict(
    found: &Evidence,
    suggested: &Record,
    settling: Settling,
    rival: impl FnOnce() -> bool,
) -> Option<Status> {
    let has_place = suggested.evidence.iter().any(|e| e.path.is_some());
    if found.toward.is_empty() || settling == Settling::KeepOnly {
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
/// the `establish` that binds, if the log holds one). Returns the change,
/// by the operation whose evidence decided it.
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
    // An establish binds when the evidence it names still holds, or when
    // it is the establishment this evidence gives (its content address):
    // another machine's, resting on its own copy of a signal the fold
    // took from this one (one address, two ids).
    let address = || {
        let keys: Vec<&str> = toward
            .iter()
            .take(MAX_BECAUSE)
            .map(|&a| evidence_key(&records[a]))
            .collect();
        establish_address(&records[m.at].op_id(), &keys)
    };
    let binding = outcome
        .filter(|&s| s == Status::Established)
        .and_then(|_| {
            let address = address();
            establishes.get(&m.at).into_iter().flatten().find(|&&e| {
                records[e].address.as_deref() == Some(address.as_str())
                    || records[e]
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
