//! The fold: replay the log in id order and give every subject its status.
//!
//! The fold is a reducer: [`Ledger::apply_next`] applies one typed
//! operation ([`Op`]) in id order, re-checking it against the policy (a
//! remote can push anything: what the policy refuses is ignored and
//! listed), and emits an [`Event`] for every status it changes; a reset
//! replays the prefix before its point. The end-of-log passes then settle
//! suggestions by evidence (`fold/settle.rs`), mark disagreements and count
//! standing (`fold/disagree.rs`). What the fold says of each subject
//! ([`State`], [`Status`], [`Event`]) is in `fold/state.rs`. `fold` is a
//! pure function of the records it is given, and every reader calls it,
//! so they agree; the same pass gives per-subject histories
//! ([`fold_with_history`]) and the log as of an instant ([`fold_as_of`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use compact_str::CompactString;

use serde::{Deserialize, Serialize};

use super::axes::Axes;
use super::id::OpId;
use super::op::Op;
use super::policy::person_decides;
use super::record::{Kind, Record, Scope, SignalSource};
use super::trust::{self, Mode, Trust, Verdict, Vouch};

pub mod checkpoint;
pub(super) mod disagree;
pub(super) mod settle;
pub mod state;

use disagree::{count_sessions, mark_disagreements};
use settle::Settling;
pub use state::{Event, Ignored, Standing, State, Status};

/// The folded log: the records in id order and the reducer's state over
/// them, so more operations can be applied.
/// The checkpoint ([`checkpoint`]) writes the records, then `ignored`,
/// `fold` and `view`: a field added here is added there too (one added to
/// [`Folding`] is in it without more code).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// Every record, in id order.
    records: Vec<Record>,
    pub ignored: Vec<Ignored>,
    fold: Folding,
    /// A reader's view ([`Ledger::view`]): only what states a subject or
    /// imports a file. It answers as the whole ledger does; nothing more
    /// can be applied to it.
    view: bool,
}

/// The reducer's state, beside the records it reads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Folding {
    /// The state of each subject-bearing record, parallel to `records`.
    states: Vec<Option<Box<State>>>,
    /// Each record's id as a number, parallel to `records` (the
    /// checkpoint computes them again from the records).
    #[serde(skip)]
    keys: Vec<u128>,
    /// Where each rule was last kept or established (a position in the log).
    kept_at: Vec<Option<usize>>,
    /// The latest import of each file: a new import of a path supersedes it.
    imported: BTreeMap<String, usize>,
    /// The content addresses the log holds (one operation per address).
    addresses: BTreeSet<String>,
    /// The position each ignored entry came from, parallel to `ignored`
    /// (`usize::MAX` for what `Ledger::new` set aside).
    ignored_at: Vec<usize>,
    /// How many records have been applied.
    applied: usize,
    /// The positions of the signals, establishes and widenings applied,
    /// in order: the evidence settling reads, and where each rule's scope
    /// last changed (drift compares only the usage counts taken over the
    /// files a rule holds for now).
    evidence: Vec<usize>,
    /// Status changes, in the order they happened (when asked for; a
    /// checkpoint does not keep them).
    #[serde(skip)]
    events: Option<Vec<Event>>,
    /// Each subject's status as its history last reported it.
    reported: Vec<Option<Status>>,
    /// A reset is replaying the prefix: its changes are reported after.
    replaying: bool,
    /// What the end-of-log passes overwrote (status, contested_by,
    /// sessions), to restore before the next operation is applied: their
    /// results hold for the log as it ends, not for the log that goes on.
    undo: Option<Vec<Overwritten>>,
    /// The targets operations named that the log did not hold when they
    /// were applied (as numbers): one arriving later is handed back by
    /// [`Ledger::apply`], since a fold from the start would find it.
    missing: BTreeSet<u128>,
    /// Each project's typed axes: settling and disagreements compare
    /// scopes on them (given again when a checkpoint is read).
    #[serde(skip)]
    axes: Axes,
    /// What establishes a suggestion besides a keep (`[context] settle`).
    /// Kept in the checkpoint, whose fingerprint covers it, and given
    /// again when one is read.
    #[serde(default)]
    settling: Settling,
    /// Who signed each operation whose signature verified (by id, the
    /// principal): what the log and `context <path>` show. Kept in the
    /// checkpoint, whose fingerprint covers the allowed-signers file
    /// (packed: every hook reads the view's share of it).
    #[serde(default, with = "packed_signers")]
    signed: BTreeMap<CompactString, CompactString>,
    /// The trust signatures are verified by (`[trust]`; given again when a
    /// checkpoint is read).
    #[serde(skip)]
    trust: Option<Arc<Trust>>,
    /// Verdicts worked out ahead, on every core, by position.
    #[serde(skip)]
    verdicts: HashMap<usize, Verdict>,
    /// In a reader's view: how many records the whole ledger it was taken
    /// from holds (what a listing that matches nothing counts).
    #[serde(default)]
    whole: usize,
    /// In a reader's view: the id of the newest record the whole ledger
    /// held, or a check run taken in since (what a suggestion taken into
    /// it must sort after: `Ledger::take_added`).
    #[serde(default)]
    newest: Option<CompactString>,
    /// Other copies of an id the log holds more than once (a signature
    /// disputed: [`set_aside_copies`]), until [`Ledger::with_trust`]
    /// prefers one whose signature verifies.
    #[serde(skip)]
    copies: Vec<Record>,
}

/// A subject's state and where it was last kept, before the end-of-log
/// passes.
type Overwritten = (usize, Box<State>, Option<usize>);

/// What an operation that acts on an earlier subject does to it.
enum Decision<'r> {
    Keep { window: &'r Scope, advisory: bool },
    Drop,
    Withdraw,
    Widen { scope: &'r Scope },
    Signal { signal: &'r super::record::Signal },
    Establish,
}

impl Ledger {
    pub fn get(&self, id: &OpId) -> Option<&Record> {
        self.position(id).map(|i| &self.records[i])
    }

    pub fn state(&self, id: &OpId) -> Option<&State> {
        self.position(id)
            .and_then(|i| self.fold.states[i].as_deref())
    }

    /// Whether the log holds an operation with this content address.
    pub fn holds_address(&self, address: &str) -> bool {
        self.fold.addresses.contains(address)
    }

    /// Every record, in id order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Records with their states, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&Record, Option<&State>)> {
        self.records
            .iter()
            .zip(self.fold.states.iter().map(Option::as_deref))
    }

    /// How many operations the log holds: the records of a whole ledger;
    /// of a reader's view, those of the ledger it was taken from (and the
    /// check runs taken in since).
    pub fn log_len(&self) -> usize {
        if self.view {
            self.fold.whole
        } else {
            self.records.len()
        }
    }

    /// The ids the log holds, sorted (for prefix resolution).
    pub fn ids(&self) -> Vec<OpId> {
        self.records.iter().map(Record::op_id).collect()
    }

    /// Every status change, in order, when the ledger keeps them
    /// ([`fold_with_history`], [`Ledger::keep_history`]).
    pub fn events(&self) -> &[Event] {
        self.fold.events.as_deref().unwrap_or_default()
    }

    /// The status changes of one subject, oldest first.
    pub fn history(&self, id: &OpId) -> Vec<Event> {
        self.events()
            .iter()
            .filter(|e| e.subject == *id)
            .copied()
            .collect()
    }

    /// The position of `id` in the log, if it holds it.
    pub(super) fn position(&self, id: &OpId) -> Option<usize> {
        self.fold.keys.binary_search(&id.key()).ok()
    }

    /// The state of the record at `at`, as the reducer holds it now.
    pub(super) fn state_at(&self, at: usize) -> Option<&State> {
        self.fold.states[at].as_deref()
    }

    /// Report the status the record at `at` has now, because of the
    /// operation at `by` (nothing when its history already says so).
    pub(super) fn report(&mut self, at: usize, by: usize) {
        if let Some(to) = self.fold.states[at].as_ref().map(|s| s.status) {
            self.fold.emit(&self.records, at, by, to);
        }
    }

    /// Take `status` as what the history of the record at `at` last
    /// reported (the reducer reports a change against it).
    pub(super) fn set_reported(&mut self, at: usize, status: Status) {
        self.fold.reported[at] = Some(status);
    }

    /// Keep every status change from now on.
    pub fn keep_history(&mut self) {
        self.fold.events.get_or_insert_with(Vec::new);
    }

    /// A ledger over `records` with nothing applied yet. Records are sorted
    /// by id, exact repeats dropped, and of two operations with one content
    /// address the younger is ignored (the older id stands).
    pub fn new(mut records: Vec<Record>) -> Ledger {
        // One pass over the records (a long log's are read as they are
        // stored: in order, every id once): their keys, and whether any
        // needs sorting, a repeat dropped or a content address compared.
        let mut keys: Vec<u128> = Vec::with_capacity(records.len());
        let mut ordered = true;
        let mut addressed = false;
        for r in &records {
            let key = super::id::key(&r.id);
            ordered &= keys.last().is_none_or(|&k| k < key);
            addressed |= r.address.is_some();
            keys.push(key);
        }
        let mut copies = Vec::new();
        if !ordered {
            records.sort_by(|a, b| a.id.cmp(&b.id));
            copies = set_aside_copies(&mut records);
        }
        let mut ignored = Vec::new();
        let mut addresses = BTreeSet::new();
        if addressed {
            records.retain(|r| match &r.address {
                Some(address) if !addresses.insert(address.clone()) => {
                    ignored.push(Ignored {
                        id: r.op_id(),
                        reason: format!("an older operation holds content address {address}"),
                    });
                    false
                }
                _ => true,
            });
        }
        if !ordered || records.len() != keys.len() {
            keys = records.iter().map(|r| super::id::key(&r.id)).collect();
        }
        let n = records.len();
        Ledger {
            fold: Folding {
                keys,
                states: vec![None; n],
                ignored_at: vec![usize::MAX; ignored.len()],
                kept_at: vec![None; n],
                imported: BTreeMap::new(),
                addresses,
                applied: 0,
                evidence: Vec::new(),
                missing: BTreeSet::new(),
                events: None,
                reported: vec![None; n],
                replaying: false,
                undo: None,
                axes: Axes::default(),
                settling: Settling::default(),
                signed: BTreeMap::new(),
                trust: None,
                verdicts: HashMap::new(),
                whole: 0,
                newest: None,
                copies,
            },
            records,
            ignored,
            view: false,
        }
    }

    /// Compare scopes on each project's typed axes (before anything is
    /// applied: what was folded compared without them).
    pub fn with_axes(mut self, axes: Axes) -> Ledger {
        debug_assert_eq!(self.fold.applied, 0, "axes are set before the fold");
        self.fold.axes = axes;
        self
    }

    /// The typed axes the fold compares scopes on.
    pub fn axes(&self) -> &Axes {
        &self.fold.axes
    }

    /// Settle suggestions as the project says (`[context] settle`; before
    /// anything is applied, as [`Ledger::with_axes`]).
    pub fn with_settling(mut self, settling: Settling) -> Ledger {
        debug_assert_eq!(self.fold.applied, 0, "settling is set before the fold");
        self.fold.settling = settling;
        self
    }

    /// How the fold settles suggestions.
    pub fn settling(&self) -> Settling {
        self.fold.settling
    }

    /// Verify signatures by `trust` (`[trust]`; before anything is
    /// applied, as [`Ledger::with_axes`]): with `decisions = "signed"`, an
    /// operation that wants a signature is applied only when one verifies.
    /// The signatures are verified here, on every core, before the fold
    /// replays the log in order.
    ///
    /// Of several copies of one id, one whose signature verifies stands
    /// (whichever copy arrived first, and whatever the others hold).
    pub fn with_trust(mut self, trust: Option<Arc<Trust>>) -> Ledger {
        debug_assert_eq!(self.fold.applied, 0, "trust is set before the fold");
        let copies = std::mem::take(&mut self.fold.copies);
        if let Some(trust) = &trust {
            self.fold.verdicts = verify_all(&self.records, trust);
            for copy in copies {
                let Some(vouch) = trust::wanted(&copy) else {
                    continue;
                };
                let Ok(at) = self.fold.keys.binary_search(&super::id::key(&copy.id)) else {
                    continue;
                };
                if matches!(self.fold.verdicts.get(&at), Some(Verdict::Signed(_))) {
                    continue;
                }
                let verdict = trust.judge(&copy, vouch);
                if matches!(verdict, Verdict::Signed(_)) {
                    self.records[at] = copy;
                    self.fold.verdicts.insert(at, verdict);
                }
            }
        }
        self.fold.trust = trust;
        self
    }

    /// The trust of a ledger read from a checkpoint folded by it (its
    /// fingerprint names the file), for the operations applied after.
    pub fn trusting(mut self, trust: Option<Arc<Trust>>) -> Ledger {
        self.fold.trust = trust;
        self
    }

    /// The principal whose signature on `id` verified, if one did.
    pub fn signed_by(&self, id: &str) -> Option<&str> {
        self.fold.signed.get(id).map(CompactString::as_str)
    }

    /// Whether `record`'s `scope` covers `point` on its project's axes.
    pub fn covers(&self, record: &Record, scope: &Scope, point: &super::scope::Point) -> bool {
        scope.covers_in(self.fold.axes.space(&record.project), point)
    }

    /// How many records have been applied.
    pub fn applied(&self) -> usize {
        self.fold.applied
    }

    /// Apply the next record in id order; `false` when every record is
    /// applied. The end-of-log passes hold until then and run again at the
    /// next [`Ledger::finish`].
    pub fn apply_next(&mut self) -> bool {
        if self.view || self.fold.applied >= self.records.len() {
            return false;
        }
        self.fold.apply_next(&self.records, &mut self.ignored);
        true
    }

    /// Apply one more operation, which must sort after every one the
    /// ledger holds, and return the status changes it made (before the
    /// end-of-log passes, which [`Ledger::finish`] runs again). A record
    /// that sorts earlier (merged in from elsewhere), or that an operation
    /// already applied named before the log held it, needs a fold from the
    /// start: it is refused and handed back.
    pub fn apply(&mut self, record: Record) -> Result<Vec<Event>, Box<Record>> {
        if self.view {
            return Err(Box::new(record));
        }
        while self.apply_next() {}
        let key = super::id::key(&record.id);
        if !super::id::is_id(&record.id)
            || self.fold.keys.last().is_some_and(|&k| k >= key)
            || self.fold.missing.contains(&key)
        {
            return Err(Box::new(record));
        }
        if let Some(address) = &record.address
            && !self.fold.addresses.insert(address.clone())
        {
            self.ignored.push(Ignored {
                id: record.op_id(),
                reason: format!("an older operation holds content address {address}"),
            });
            self.fold.ignored_at.push(usize::MAX);
            return Ok(Vec::new());
        }
        self.records.push(record);
        self.fold.keys.push(key);
        self.fold.states.push(None);
        self.fold.kept_at.push(None);
        self.fold.reported.push(None);
        let history = self.fold.events.is_some();
        let before = self.fold.events.replace(Vec::new()).unwrap_or_default();
        self.fold.apply_next(&self.records, &mut self.ignored);
        let made = self.fold.events.take().unwrap_or_default();
        if history {
            let mut all = before;
            all.extend_from_slice(&made);
            self.fold.events = Some(all);
        }
        Ok(made)
    }

    /// The end-of-log passes over what was applied: disagreements, then
    /// standing.
    pub fn finish(&mut self) {
        self.fold.finish(&self.records);
    }

    /// Apply every record, then the end-of-log passes.
    fn run(mut self) -> Ledger {
        while self.apply_next() {}
        self.finish();
        self
    }
}

impl Folding {
    fn ignore(
        &mut self,
        ignored: &mut Vec<Ignored>,
        records: &[Record],
        at: usize,
        reason: String,
    ) {
        ignored.push(Ignored {
            id: records[at].op_id(),
            reason,
        });
        self.ignored_at.push(at);
    }

    /// Report that `subject` is now `to`, because of the operation at `by`
    /// (nothing when its history already says so).
    fn emit(&mut self, records: &[Record], subject: usize, by: usize, to: Status) {
        if self.replaying {
            return;
        }
        let from = self.reported[subject];
        if from == Some(to) {
            return;
        }
        self.reported[subject] = Some(to);
        if let Some(events) = self.events.as_mut() {
            events.push(Event {
                subject: records[subject].op_id(),
                by: records[by].op_id(),
                from,
                to,
            });
        }
    }

    /// Undo what the end-of-log passes wrote, before the log goes on.
    fn unfinish(&mut self) {
        for (at, state, kept_at) in self.undo.take().unwrap_or_default() {
            self.states[at] = Some(state);
            self.kept_at[at] = kept_at;
        }
    }

    /// The typed operation at `at` and the position of the operation it
    /// acts on (looked up once: a long log is mostly signals naming their
    /// rule), or why the fold ignores it (it does not parse, or the policy
    /// refuses it). A target the log does not hold is noted as missing.
    fn admitted<'r>(
        &mut self,
        records: &'r [Record],
        at: usize,
    ) -> Result<(Op<'r>, Option<usize>), String> {
        let r = &records[at];
        let op = Op::of(r).map_err(|e| e.to_string())?;
        let target_at = match op.target() {
            Some(t) => {
                let key = t.key();
                let found = self.keys.binary_search(&key).ok();
                if found.is_none() {
                    self.missing.insert(key);
                }
                found
            }
            None => None,
        };
        let target = target_at.map(|t| &records[t]);
        person_decides(&r.actor, &op, target).map_err(|e| e.to_string())?;
        if let Some(trust) = &self.trust
            && let Some(vouch) = trust::wanted(r)
        {
            let verdict = match self.verdicts.get(&at) {
                Some(v) => v.clone(),
                None => trust.judge(r, vouch),
            };
            match verdict {
                Verdict::Signed(principal) => {
                    self.signed.insert(r.id.clone(), principal);
                }
                other if trust.mode == Mode::Signed => return Err(other.reason(vouch)),
                _ => {}
            }
        }
        Ok((op, target_at))
    }

    /// Apply the next record in id order, re-checking the policy.
    fn apply_next(&mut self, records: &[Record], ignored: &mut Vec<Ignored>) {
        self.unfinish();
        let i = self.applied;
        self.applied += 1;
        let (op, target_at) = match self.admitted(records, i) {
            Ok(admitted) => admitted,
            Err(reason) => return self.ignore(ignored, records, i, reason),
        };
        self.apply_op(records, ignored, i, op, target_at);
    }

    /// Apply an admitted operation, which acts on the record at
    /// `target_at` (if any).
    fn apply_op(
        &mut self,
        records: &[Record],
        ignored: &mut Vec<Ignored>,
        i: usize,
        op: Op<'_>,
        target_at: Option<usize>,
    ) {
        let decision = match op {
            Op::Edit {
                target: Some(target),
                ..
            } => return self.edit(records, ignored, i, op, target, target_at),
            Op::Observe { .. } | Op::Correct { .. } | Op::Edit { .. } => {
                return self.state_subject(records, i, op);
            }
            Op::Import { subject, .. } => {
                if subject.is_some() {
                    self.state_subject(records, i, op);
                }
                return;
            }
            Op::Reset { before } => return self.reset(records, ignored, i, before),
            Op::Check { .. } => return,
            Op::Keep {
                window, advisory, ..
            } => Decision::Keep { window, advisory },
            Op::Drop { .. } => Decision::Drop,
            Op::Withdraw { .. } => Decision::Withdraw,
            Op::Widen { scope, .. } => Decision::Widen { scope },
            Op::Signal { signal, .. } => Decision::Signal { signal },
            Op::Establish { .. } => Decision::Establish,
        };
        let target = op.target().expect("deciding operations name a target");
        self.decide(records, ignored, i, target, target_at, decision);
    }

    /// A subject enters the log: suggested, or established when a person
    /// imported or wrote it (a new import of a file supersedes the old).
    fn state_subject(&mut self, records: &[Record], i: usize, op: Op<'_>) {
        let r = &records[i];
        let status = if matches!(op, Op::Import { .. } | Op::Edit { .. }) {
            self.kept_at[i] = Some(i);
            Status::Established
        } else {
            Status::Suggested
        };
        let mut state = new_state(r, status);
        if let Op::Edit { advisory, .. } = op {
            state.advisory = advisory;
        }
        self.states[i] = Some(Box::new(state));
        self.emit(records, i, i, status);
        if let Op::Import { evidence, .. } = op
            && let Some(path) = evidence.first().and_then(|e| e.path.clone())
            && let Some(earlier) = self.imported.insert(path, i)
            && let Some(state) = self.states[earlier].as_mut()
            && state.status.answers()
        {
            state.status = Status::Dropped;
            state.decided_by = Some(r.op_id());
            self.emit(records, earlier, i, Status::Dropped);
        }
    }

    /// A person's edit of the subject at `target_at`: the edit states the
    /// rule as it now is, established from the start, and the subject it
    /// replaces stops answering (dropped, decided by the edit). An edit
    /// naming what holds no subject here is ignored, as any decision is.
    fn edit(
        &mut self,
        records: &[Record],
        ignored: &mut Vec<Ignored>,
        i: usize,
        op: Op<'_>,
        target: OpId,
        target_at: Option<usize>,
    ) {
        let Some(t) = target_at.filter(|&t| self.states[t].is_some()) else {
            let reason = format!("it edits #{}, which holds no subject here", target.as_str());
            return self.ignore(ignored, records, i, reason);
        };
        self.state_subject(records, i, op);
        let state = self.states[t].as_mut().expect("a state");
        if state.status.answers() {
            state.status = Status::Dropped;
            state.decided_by = Some(records[i].op_id());
            self.emit(records, t, i, Status::Dropped);
        }
    }

    /// Apply an operation that acts on an earlier subject.
    fn decide(
        &mut self,
        records: &[Record],
        ignored: &mut Vec<Ignored>,
        i: usize,
        target: OpId,
        target_at: Option<usize>,
        decision: Decision<'_>,
    ) {
        let Some(t) = target_at.filter(|&t| self.states[t].is_some()) else {
            let reason = format!(
                "it acts on #{}, which holds no subject here",
                target.as_str()
            );
            return self.ignore(ignored, records, i, reason);
        };
        let by = records[i].op_id();
        let state = self.states[t].as_mut().expect("a state");
        let decided = |state: &mut State, status: Status| {
            state.status = status;
            state.decided_by = Some(by);
        };
        match decision {
            Decision::Keep { window, advisory } => {
                // A keep replaces the bounds it gives and keeps the other.
                if let Some(from) = &window.valid_from {
                    state.scope.valid_from = Some(from.clone());
                }
                if let Some(to) = &window.valid_to {
                    state.scope.valid_to = Some(to.clone());
                }
                state.advisory = advisory;
                state.kept = true;
                decided(state, Status::Established);
                self.kept_at[t] = Some(i);
            }
            Decision::Drop => decided(state, Status::Dropped),
            Decision::Withdraw if state.status == Status::Suggested && !state.kept => {
                decided(state, Status::Withdrawn)
            }
            Decision::Withdraw => {
                let reason = format!(
                    "#{} is no longer a suggestion ({})",
                    target.short(),
                    state.status.as_str()
                );
                return self.ignore(ignored, records, i, reason);
            }
            // An establish binds only while the evidence it names holds:
            // settling, at the end of the log, reads it again.
            Decision::Establish => self.evidence.push(i),
            Decision::Widen { scope } => {
                state.scope.point = scope.point.clone();
                state.scope.workspace = scope.workspace;
                self.evidence.push(i);
            }
            Decision::Signal { signal } => {
                self.evidence.push(i);
                match signal.source {
                    SignalSource::Usage => {
                        state.standing.usage = Some((signal.preferred, signal.avoided))
                    }
                    SignalSource::Merge => state.standing.merges += 1,
                    SignalSource::Applied => state.standing.applied += 1,
                }
            }
        }
        let to = self.states[t].as_ref().expect("a state").status;
        self.emit(records, t, i, to);
    }

    /// A person's reset at `i` sets aside every operation from the first at
    /// or after `before` up to itself: the log answers as the prefix before
    /// that point did, and what was set aside stays, marked `reset`. The
    /// prefix is replayed once, with the set-asides of the resets inside it
    /// computed newest first (a reset inside the range of a later one is
    /// itself set aside), so no reset replays another: a reset costs one
    /// pass over the log before it, however many resets that holds.
    fn reset(&mut self, records: &[Record], ignored: &mut Vec<Ignored>, i: usize, before: OpId) {
        let start = self.keys[..i].partition_point(|&k| k < before.key());
        if start >= i {
            return;
        }
        let mut aside = vec![false; i];
        aside[start..i].iter_mut().for_each(|a| *a = true);
        let mut j = start;
        while j > 0 {
            j -= 1;
            // Only resets set anything aside: parse and ask the policy
            // about those alone.
            if records[j].kind != Kind::Reset {
                continue;
            }
            let Ok((Op::Reset { before }, _)) = self.admitted(records, j) else {
                continue;
            };
            let from = self.keys[..j].partition_point(|&k| k < before.key());
            if from < j {
                aside[from..j].iter_mut().for_each(|a| *a = true);
                j = from;
            }
        }
        // Replay from nothing; what content addresses set aside stays.
        let (kept, at): (Vec<Ignored>, Vec<usize>) = std::mem::take(ignored)
            .into_iter()
            .zip(std::mem::take(&mut self.ignored_at))
            .filter(|&(_, at)| at == usize::MAX)
            .unzip();
        *ignored = kept;
        self.ignored_at = at;
        self.replaying = true;
        self.states[..i].iter_mut().for_each(|s| *s = None);
        self.kept_at[..i].iter_mut().for_each(|k| *k = None);
        self.imported.clear();
        self.evidence.clear();
        for (at, &aside) in aside.iter().enumerate() {
            let (op, target_at) = match self.admitted(records, at) {
                Ok(admitted) => admitted,
                Err(reason) => {
                    self.ignore(ignored, records, at, reason);
                    continue;
                }
            };
            if aside {
                if op.states_a_subject() {
                    self.states[at] = Some(Box::new(new_state(&records[at], Status::Reset)));
                }
            } else if !matches!(op, Op::Reset { .. }) {
                // A reset still in force acted through `aside`.
                self.apply_op(records, ignored, at, op, target_at);
            }
        }
        self.replaying = false;
        for at in 0..i {
            if let Some(to) = self.states[at].as_ref().map(|s| s.status) {
                self.emit(records, at, i, to);
            }
        }
        self.applied = i + 1;
    }

    /// The end-of-log passes over what was applied: disagreements, then
    /// standing. A status they change is an event by the later of the two
    /// rules that disagree. What they write is undone before the next
    /// operation is applied.
    fn finish(&mut self, records: &[Record]) {
        if self.undo.is_some() {
            return;
        }
        let n = self.applied;
        let saved: Vec<Overwritten> = self.states[..n]
            .iter()
            .enumerate()
            .filter_map(|(at, s)| s.as_ref().map(|s| (at, s.clone(), self.kept_at[at])))
            .collect();
        let settled = settle::settle(
            &records[..n],
            &self.keys[..n],
            &self.evidence,
            &mut self.states[..n],
            &mut self.kept_at[..n],
            &self.axes,
            self.settling,
        );
        for (at, by, to) in settled {
            self.emit(records, at, by, to);
        }
        mark_disagreements(
            &records[..n],
            &mut self.states[..n],
            &self.kept_at[..n],
            &self.axes,
        );
        count_sessions(&records[..n], &mut self.states[..n]);
        for &(at, _, _) in &saved {
            let Some(state) = self.states[at].as_ref() else {
                continue;
            };
            let latest = state.contested_by.iter().max().copied();
            let by = latest
                .and_then(|c| self.keys.binary_search(&c.key()).ok())
                .map_or(at, |c| c.max(at));
            let to = state.status;
            self.emit(records, at, by, to);
        }
        self.undo = Some(saved);
    }
}

/// Fold records (any order; duplicates by content address are resolved here:
/// the older id stands).
pub fn fold(records: Vec<Record>) -> Ledger {
    Ledger::new(records).run()
}

/// Fold records and keep every status change ([`Ledger::events`],
/// [`Ledger::history`]).
pub fn fold_with_history(records: Vec<Record>) -> Ledger {
    let mut ledger = Ledger::new(records);
    ledger.fold.events = Some(Vec::new());
    ledger.run()
}

/// The log as it stood at `cutoff_ms` (Unix milliseconds): the reducer
/// applies the operations the log had accepted by then (ids are
/// time-ordered, so they are a prefix) and stops there.
#[cfg(test)]
pub(crate) fn fold_as_of(records: Vec<Record>, cutoff_ms: u64) -> Ledger {
    Ledger::new(records).as_of(cutoff_ms)
}

impl Ledger {
    /// [`fold_as_of`] over a ledger with nothing applied yet (with its axes).
    pub fn as_of(self, cutoff_ms: u64) -> Ledger {
        as_of(self, cutoff_ms)
    }

    /// Apply every record and the end-of-log passes.
    pub fn folded(self) -> Ledger {
        self.run()
    }
}

fn as_of(mut ledger: Ledger, cutoff_ms: u64) -> Ledger {
    let within = |r: &Record| super::id::time_of(&r.id) + super::id::EPOCH_MS <= cutoff_ms;
    while ledger.records.get(ledger.fold.applied).is_some_and(within) {
        ledger.apply_next();
    }
    ledger.records.truncate(ledger.fold.applied);
    ledger.fold.keys.truncate(ledger.fold.applied);
    ledger.fold.states.truncate(ledger.fold.applied);
    ledger.fold.kept_at.truncate(ledger.fold.applied);
    ledger.fold.reported.truncate(ledger.fold.applied);
    ledger.fold.addresses = ledger
        .records
        .iter()
        .filter_map(|r| r.address.clone())
        .collect();
    // What `Ledger::new` set aside after the cutoff was not there yet.
    let (ignored, at): (Vec<Ignored>, Vec<usize>) = std::mem::take(&mut ledger.ignored)
        .into_iter()
        .zip(std::mem::take(&mut ledger.fold.ignored_at))
        .filter(|(i, _)| i.id.unix_ms() <= cutoff_ms)
        .unzip();
    ledger.ignored = ignored;
    ledger.fold.ignored_at = at;
    ledger.finish();
    ledger
}

/// Who signed what, as a checkpoint keeps it: the principals once each,
/// the ids in one string, and for each id the principal's place. Reading
/// it back costs a hook a few parsed strings, not two per signed decision
/// (a view of 800 rules kept by signed decisions read 1.7M instructions
/// more than one without). A checkpoint is derived and checked, but what
/// it holds is still read with care: anything that does not add up is
/// an error, and the log is folded again.
mod packed_signers {
    use std::collections::BTreeMap;

    use compact_str::CompactString;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Packed {
        principals: Vec<CompactString>,
        /// The ids, in order, each followed by a space.
        ids: String,
        by: Vec<u32>,
    }

    pub fn serialize<S: Serializer>(
        map: &BTreeMap<CompactString, CompactString>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut principals: Vec<CompactString> = Vec::new();
        let mut places: std::collections::HashMap<&CompactString, u32> = Default::default();
        let mut ids = String::new();
        let mut by = Vec::with_capacity(map.len());
        for (id, principal) in map {
            let at = *places.entry(principal).or_insert_with(|| {
                principals.push(principal.clone());
                (principals.len() - 1) as u32
            });
            ids.push_str(id);
            ids.push(' ');
            by.push(at);
        }
        Packed {
            principals,
            ids,
            by,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<CompactString, CompactString>, D::Error> {
        let packed = Packed::deserialize(d)?;
        let ids = packed.ids.split_terminator(' ');
        let bad = || serde::de::Error::custom("a checkpoint's signers do not add up");
        if ids.clone().count() != packed.by.len() {
            return Err(bad());
        }
        ids.zip(packed.by)
            .map(|(id, at)| {
                let principal = packed.principals.get(at as usize).ok_or_else(bad)?;
                Ok((CompactString::from(id), principal.clone()))
            })
            .collect()
    }
}

/// Of several copies of one id in `records` (sorted by id), keep one,
/// chosen by what the copies hold and never by which arrived first: a
/// signed copy before an unsigned one, then the smaller canonical bytes.
/// Exact repeats are dropped; the other copies are returned, so that
/// [`Ledger::with_trust`] can prefer one whose signature verifies. A log
/// holds two copies of one id only when a signature is disputed (the
/// store keeps a copy carrying one beside a held copy): an unsigned or
/// forged copy pushed first cannot shadow a signed decision.
fn set_aside_copies(records: &mut Vec<Record>) -> Vec<Record> {
    if records.windows(2).all(|w| w[0].id != w[1].id) {
        return Vec::new();
    }
    let mut kept = Vec::with_capacity(records.len());
    let mut copies = Vec::new();
    let mut all = std::mem::take(records).into_iter().peekable();
    while let Some(first) = all.next() {
        if all.peek().is_none_or(|next| next.id != first.id) {
            kept.push(first);
            continue;
        }
        let mut group = vec![(first.sig.is_none(), first.to_canonical_json(), first)];
        while let Some(next) = all.next_if(|next| next.id == group[0].2.id) {
            group.push((next.sig.is_none(), next.to_canonical_json(), next));
        }
        group.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        group.dedup_by(|b, a| a.1 == b.1);
        let mut group = group.into_iter().map(|(_, _, r)| r);
        kept.extend(group.next());
        copies.extend(group);
    }
    *records = kept;
    copies
}

/// The verdict on every signed record that wants a signature, worked out
/// on every core, their curve checks batched ([`Trust::judge_many`]). The
/// records are cut into runs of [`trust::BATCH`] in log order and each
/// core takes whole runs, so what is checked together depends on the log,
/// not on the machine (an unsigned one is answered as it is applied).
fn verify_all(records: &[Record], trust: &Trust) -> HashMap<usize, Verdict> {
    let signed: Vec<(usize, Vouch<'_>)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.sig.is_some())
        .filter_map(|(i, r)| Some((i, trust::wanted(r)?)))
        .collect();
    if signed.is_empty() {
        return HashMap::new();
    }
    let judge = |part: &[(usize, Vouch<'_>)]| {
        let items: Vec<(&Record, Vouch<'_>)> =
            part.iter().map(|&(i, v)| (&records[i], v)).collect();
        part.iter()
            .map(|&(i, _)| i)
            .zip(trust.judge_many(&items))
            .collect::<Vec<_>>()
    };
    let runs = signed.len().div_ceil(trust::BATCH);
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(runs);
    if threads <= 1 {
        return judge(&signed).into_iter().collect();
    }
    let chunk = runs.div_ceil(threads) * trust::BATCH;
    std::thread::scope(|scope| {
        let handles: Vec<_> = signed
            .chunks(chunk)
            .map(|part| scope.spawn(move || judge(part)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("verifying never panics"))
            .collect()
    })
}

fn new_state(r: &Record, status: Status) -> State {
    State {
        status,
        contested_by: Vec::new(),
        kept: status == Status::Established,
        scope: (*r.scope).clone(),
        advisory: false,
        standing: Standing::default(),
        decided_by: None,
        because: Vec::new(),
        drift: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, ActorKind, Subject};

    fn op(n: u64, kind: Kind, actor: ActorKind) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        let actor = Actor {
            kind: actor,
            name: "x".into(),
            session: Some("s".into()),
        };
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new("p", actor, kind)
        }
    }

    fn note(n: u64, text: &str) -> Record {
        Record {
            subject: Some(Box::new(Subject::Note { text: text.into() })),
            ..op(n, Kind::Observe, ActorKind::Agent)
        }
    }

    fn reset(n: u64, before: &Record) -> Record {
        Record {
            before: Some(before.id.clone()),
            ..op(n, Kind::Reset, ActorKind::Person)
        }
    }

    /// 20,000 sessions suggesting one rule, and one rival: the fold
    /// compares terms, not every pair of rules (before: 200 million pairs
    /// held at once, gigabytes and minutes for every read of such a log).
    #[test]
    fn many_sessions_suggesting_one_rule_fold_in_linear_time() {
        let term = |n: u64, preferred: &str, session: String| Record {
            subject: Some(Box::new(Subject::Term {
                preferred: preferred.into(),
                avoid: vec!["Quick cast".into()],
            })),
            actor: Actor {
                kind: ActorKind::Agent,
                name: "claude-code".into(),
                session: Some(session.into()),
            },
            ..op(n, Kind::Observe, ActorKind::Agent)
        };
        let n = 20_000;
        let mut log: Vec<Record> = (0..n)
            .map(|i| term(i, "Quickcast", format!("s{i}")))
            .collect();
        let rival = term(n, "QuickCast app", "rival".into());
        log.push(rival.clone());
        let ledger = fold(log.clone());
        let first = ledger.state(&log[0].op_id()).unwrap();
        assert_eq!(first.status, Status::Contested);
        assert_eq!(first.contested_by, [rival.op_id()]);
        assert_eq!(first.standing.sessions, n as usize);
        let rival = ledger.state(&rival.op_id()).unwrap();
        assert_eq!(rival.status, Status::Contested);
        assert_eq!(rival.contested_by.len(), n as usize);
        assert_eq!(rival.standing.sessions, 1);
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
            |records: Vec<Record>, of: &Record| fold(records).state(&of.op_id()).map(|s| s.status);

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
            ledger.state(&a.op_id()).map(|s| s.status),
            Some(Status::Suggested)
        );
        assert!(ledger.ignored.iter().any(|i| i.id == forged.op_id()));
    }

    #[test]
    fn an_edit_is_the_rule_from_then_on_and_a_reset_before_it_brings_back_the_old() {
        let term = |preferred: &str| Subject::Term {
            preferred: preferred.into(),
            avoid: vec!["Quick cast".into()],
        };
        let rule = Record {
            subject: Some(Box::new(term("Quickcast"))),
            ..op(1, Kind::Import, ActorKind::Person)
        };
        let edit = Record {
            target: Some(rule.id.clone()),
            subject: Some(Box::new(term("QuickCast"))),
            advisory: true,
            ..op(2, Kind::Edit, ActorKind::Person)
        };
        let ledger = fold_with_history(vec![rule.clone(), edit.clone()]);
        let old = ledger.state(&rule.op_id()).unwrap();
        assert_eq!(old.status, Status::Dropped);
        assert_eq!(old.decided_by, Some(edit.op_id()));
        let new = ledger.state(&edit.op_id()).unwrap();
        assert_eq!(
            new.status,
            Status::Established,
            "not contested by what it replaced"
        );
        assert!(new.advisory && new.kept);
        assert!(
            ledger
                .history(&rule.op_id())
                .iter()
                .any(|e| e.by == edit.op_id() && e.to == Status::Dropped)
        );
        // A reset to before the edit: the rule it replaced answers again.
        let undo = reset(3, &edit);
        let ledger = fold(vec![rule.clone(), edit.clone(), undo]);
        assert_eq!(
            ledger.state(&rule.op_id()).unwrap().status,
            Status::Established
        );
        assert_eq!(ledger.state(&edit.op_id()).unwrap().status, Status::Reset);
        // An agent's edit is ignored and changes nothing; so is an edit of
        // what holds no subject.
        let forged = Record {
            actor: Actor {
                kind: ActorKind::Agent,
                name: "x".into(),
                session: Some("s".into()),
            },
            ..edit.clone()
        };
        let ledger = fold(vec![rule.clone(), forged.clone()]);
        assert_eq!(
            ledger.state(&rule.op_id()).unwrap().status,
            Status::Established
        );
        let why = &ledger
            .ignored
            .iter()
            .find(|i| i.id == forged.op_id())
            .unwrap()
            .reason;
        assert!(why.contains("may not edit #"), "{why}");
        let stray = Record {
            target: Some(note(4, "n").id),
            ..op(5, Kind::Edit, ActorKind::Person)
        };
        let stray = Record {
            subject: Some(Box::new(term("Flowkit"))),
            ..stray
        };
        let ledger = fold(vec![rule.clone(), stray.clone()]);
        assert!(ledger.state(&stray.op_id()).is_none());
        assert!(ledger.ignored.iter().any(|i| i.id == stray.op_id()));
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
        assert!(ledger.get(&older.op_id()).is_some());
        assert!(ledger.get(&younger.op_id()).is_none());
        assert!(
            ledger
                .ignored
                .iter()
                .any(|i| i.id == younger.op_id() && i.reason.contains("content address"))
        );
    }

    pub(crate) mod reducer {
        use super::*;
        use crate::ops::record::{Correction, Evidence};
        use proptest::prelude::*;

        /// One generated operation: a kind, who, and what it points at.
        #[derive(Debug, Clone)]
        pub(crate) enum Gen {
            Term(u8, u8, bool),
            Correct(u8, u8, bool),
            Import(u8, u8),
            Keep(usize),
            Drop(usize),
            Withdraw(usize, bool),
            Reset(usize, bool),
            Signal(usize),
            Addressed(u8),
        }

        pub(crate) fn operation() -> impl Strategy<Value = Gen> {
            prop_oneof![
                4 => (0u8..4, 0u8..3, any::<bool>()).prop_map(|(a, b, p)| Gen::Term(a, b, p)),
                1 => (0u8..4, 0u8..3, any::<bool>()).prop_map(|(a, b, p)| Gen::Correct(a, b, p)),
                1 => (0u8..4, 0u8..2).prop_map(|(a, f)| Gen::Import(a, f)),
                2 => (0usize..64).prop_map(Gen::Keep),
                1 => (0usize..64).prop_map(Gen::Drop),
                1 => (0usize..64, any::<bool>()).prop_map(|(t, p)| Gen::Withdraw(t, p)),
                1 => (0usize..64, any::<bool>()).prop_map(|(t, p)| Gen::Reset(t, p)),
                1 => (0usize..64).prop_map(Gen::Signal),
                1 => (0u8..3).prop_map(Gen::Addressed),
            ]
        }

        pub(crate) fn build(gens: &[Gen]) -> Vec<Record> {
            let mut out: Vec<Record> = Vec::new();
            for (n, g) in gens.iter().enumerate() {
                let n = n as u64 + 1;
                let pick =
                    |t: usize, out: &[Record]| out.get(t % out.len().max(1)).map(|r| r.id.clone());
                let forms = [
                    "Quickcast",
                    "Quick cast",
                    "QuickCast",
                    "Quick-cast",
                    "Flowkit",
                ];
                let mut r = match g {
                    Gen::Term(a, b, person) => Record {
                        subject: Some(Box::new(Subject::Term {
                            preferred: forms[*a as usize].into(),
                            avoid: vec![forms[(*a as usize + 1 + *b as usize) % 5].into()],
                        })),
                        ..op(
                            n,
                            Kind::Observe,
                            if *person {
                                ActorKind::Person
                            } else {
                                ActorKind::Agent
                            },
                        )
                    },
                    Gen::Correct(a, b, person) => {
                        let mut r = op(
                            n,
                            Kind::Correct,
                            if *person {
                                ActorKind::Person
                            } else {
                                ActorKind::Agent
                            },
                        );
                        // Another session than the suggestions': an agent's
                        // correction there is a person signal.
                        r.actor.session = Some("c".into());
                        Record {
                            correction: Some(Box::new(Correction {
                                from: forms[(*a as usize + 1 + *b as usize) % 5].into(),
                                to: forms[*a as usize].into(),
                            })),
                            ..r
                        }
                    }
                    Gen::Import(a, file) => Record {
                        subject: Some(Box::new(Subject::Term {
                            preferred: forms[*a as usize].into(),
                            avoid: vec![forms[(*a as usize + 2) % 5].into()],
                        })),
                        evidence: vec![Evidence {
                            path: Some(format!("terms{file}.tsv")),
                            ..Evidence::default()
                        }]
                        .into(),
                        ..op(n, Kind::Import, ActorKind::Person)
                    },
                    Gen::Keep(t) => Record {
                        target: pick(*t, &out),
                        ..op(n, Kind::Keep, ActorKind::Person)
                    },
                    Gen::Drop(t) => Record {
                        target: pick(*t, &out),
                        ..op(n, Kind::Drop, ActorKind::Person)
                    },
                    Gen::Withdraw(t, person) => Record {
                        target: pick(*t, &out),
                        ..op(
                            n,
                            Kind::Withdraw,
                            if *person {
                                ActorKind::Person
                            } else {
                                ActorKind::Agent
                            },
                        )
                    },
                    Gen::Reset(t, person) => Record {
                        before: pick(*t, &out),
                        ..op(
                            n,
                            Kind::Reset,
                            if *person {
                                ActorKind::Person
                            } else {
                                ActorKind::Agent
                            },
                        )
                    },
                    Gen::Addressed(k) => Record {
                        address: Some(format!("sha256:{k}")),
                        ..note(n, "addressed")
                    },
                    Gen::Signal(t) => Record {
                        target: pick(*t, &out),
                        signal: Some(Box::new(crate::ops::record::Signal {
                            source: SignalSource::Merge,
                            preferred: 1,
                            avoided: 0,
                            commit: None,
                            pr: None,
                            merger: None,
                        })),
                        ..op(n, Kind::Signal, ActorKind::Tool)
                    },
                };
                if r.kind.needs_target() && r.target.is_none()
                    || r.kind == Kind::Reset && r.before.is_none()
                {
                    r = note(n, "nothing to act on yet");
                }
                out.push(r);
            }
            out
        }

        /// The fold as it was before it became a reducer (one pass over
        /// whole-log set-asides), kept to prove the reducer answers the same.
        fn reference(
            mut records: Vec<Record>,
        ) -> (Vec<Record>, Vec<Option<Box<State>>>, Vec<Ignored>) {
            if !records.is_sorted_by(|a, b| a.id <= b.id) {
                records.sort_by(|a, b| a.id.cmp(&b.id));
            }
            records.dedup_by(|b, a| a.id == b.id);
            let mut ignored = Vec::new();
            let mut seen_addresses = BTreeSet::new();
            records.retain(|r| match &r.address {
                Some(address) if !seen_addresses.insert(address.clone()) => {
                    ignored.push(Ignored {
                        id: r.op_id(),
                        reason: format!("an older operation holds content address {address}"),
                    });
                    false
                }
                _ => true,
            });
            let set_aside = reference_set_aside(&records);
            let keys: Vec<u128> = records.iter().map(|r| crate::ops::id::key(&r.id)).collect();
            let mut states: Vec<Option<Box<State>>> = vec![None; records.len()];
            // Where each rule was last kept or established (a position in the log).
            let mut kept_at: Vec<Option<usize>> = vec![None; records.len()];
            // The latest import of each file: a new import of a path supersedes it.
            let mut imported: BTreeMap<&str, usize> = BTreeMap::new();
            for (i, r) in records.iter().enumerate() {
                let target_at = r
                    .target
                    .as_deref()
                    .and_then(|t| OpId::parse(t).ok())
                    .and_then(|t| keys.binary_search(&t.key()).ok());
                let decided = match crate::ops::op::Op::of(r) {
                    Ok(op) => person_decides(&r.actor, &op, target_at.map(|t| &records[t])),
                    Err(e) => Err(crate::ops::policy::PolicyError {
                        actor: r.actor.label(),
                        what: "record it".into(),
                        why: e.to_string(),
                    }),
                };
                if let Err(e) = decided {
                    ignored.push(Ignored {
                        id: r.op_id(),
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
                        state.decided_by = Some(r.op_id());
                    }
                    continue;
                }
                let Some(target_id) = r.target.as_deref() else {
                    continue;
                };
                let Some((t, state)) = target_at.and_then(|t| states[t].as_mut().map(|s| (t, s)))
                else {
                    if r.kind.needs_target() {
                        ignored.push(Ignored {
                            id: r.op_id(),
                            reason: format!("it acts on #{target_id}, which holds no subject here"),
                        });
                    }
                    continue;
                };
                let decide = |state: &mut State, status: Status| {
                    state.status = status;
                    state.decided_by = Some(r.op_id());
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
                        id: r.op_id(),
                        reason: format!(
                            "#{} is no longer a suggestion ({})",
                            crate::ops::id::short(target_id),
                            state.status.as_str()
                        ),
                    }),
                    // Settling (and the evidence an establish rests on) arrives with
                    // the settling work; until the fold can read that evidence again,
                    // an establish binds nothing.
                    Kind::Establish => ignored.push(Ignored {
                        id: r.op_id(),
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
                                SignalSource::Applied => state.standing.applied += 1,
                            }
                        }
                    }
                    _ => {}
                }
            }

            mark_disagreements(&records, &mut states, &kept_at, &Axes::default());
            count_sessions(&records, &mut states);
            (records, states, ignored)
        }

        fn reference_set_aside(records: &[Record]) -> Vec<bool> {
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

        type View = (Vec<(String, Option<State>)>, Vec<Ignored>);

        /// The states of the first `upto` records and what was ignored up
        /// to the last of them.
        fn view(ledger: &Ledger, upto: usize) -> View {
            let last = ledger.records[..upto.min(ledger.records.len())]
                .last()
                .map(|r| r.id.clone());
            let mut ignored: Vec<Ignored> = ledger
                .ignored
                .iter()
                .filter(|i| last.as_ref().is_none_or(|l| i.id.as_str() <= l.as_str()))
                .cloned()
                .collect();
            ignored.sort_by(|a, b| (&a.id, &a.reason).cmp(&(&b.id, &b.reason)));
            (
                ledger
                    .iter()
                    .take(upto)
                    .map(|(r, s)| (r.id.to_string(), s.cloned()))
                    .collect(),
                ignored,
            )
        }

        #[test]
        fn chained_resets_cost_one_pass_each() {
            // note, reset to before it, note, reset to before that, ...: a
            // reset that replayed the resets before it would double the
            // work with each one (2^60 applies here).
            let mut records = Vec::new();
            for k in 0..60u64 {
                let n = note(2 * k + 1, "a note");
                records.push(reset(2 * k + 2, &n));
                records.push(n);
            }
            let ledger = fold(records);
            let reset_count = ledger
                .iter()
                .filter(|(_, s)| s.is_some_and(|s| s.status == Status::Reset))
                .count();
            assert_eq!(reset_count, 60);
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

            /// Applying one operation at a time and finishing gives, at
            /// every step, what a fresh fold of that prefix gives: the
            /// as-of view at any cutoff is the fold of the log up to it.
            #[test]
            fn every_prefix_of_the_reducer_is_the_fold_of_that_prefix(gens in proptest::collection::vec(operation(), 1..24)) {
                let records = build(&gens);
                // One ledger, finished after every operation and then
                // carried on: the end-of-log passes never leak into what
                // follows.
                let mut ledger = Ledger::new(records.clone());
                ledger.keep_history();
                let mut applied = Ledger::new(Vec::new());
                let mut fed = 0;
                for k in 1..=ledger.records.len() {
                    ledger.apply_next();
                    ledger.finish();
                    // The log up to this operation, as it came (with any
                    // younger copy of a content address among it).
                    let last = ledger.records[k - 1].id.clone();
                    let prefix: Vec<Record> =
                        records.iter().filter(|r| r.id <= last).cloned().collect();
                    let fresh = fold(prefix.clone());
                    prop_assert_eq!(view(&ledger, k), view(&fresh, k));
                    let cutoff = ledger.records[k - 1].op_id().unix_ms();
                    let as_of = fold_as_of(records.clone(), cutoff);
                    prop_assert_eq!(view(&as_of, k), view(&fresh, k));
                    // The same operations applied one by one to a ledger
                    // that grows.
                    for r in &prefix[fed..] {
                        prop_assert!(applied.apply(r.clone()).is_ok());
                    }
                    fed = prefix.len();
                    applied.finish();
                    prop_assert_eq!(view(&applied, k), view(&fresh, k));
                }
                // Each subject's history is a chain: every change starts
                // where the one before ended, and the last ends in its status.
                for (r, s) in ledger.iter() {
                    let history = ledger.history(&r.op_id());
                    let mut at = None;
                    for e in &history {
                        prop_assert_eq!(e.from, at, "{}: {:?}", r.id, history);
                        at = Some(e.to);
                    }
                    prop_assert_eq!(at, s.map(|s| s.status), "{}: {:?}", r.id, history);
                }
            }

            /// The reducer answers what the whole-log fold it replaced
            /// answered: every status, contest, scope and ignored operation.
            #[test]
            fn the_reducer_answers_as_the_fold_it_replaced(gens in proptest::collection::vec(operation(), 1..32)) {
                // The fold it replaced did not settle: compare over logs that
                // give settling nothing to read (corrections by a tool are
                // no person signal; usage that never moves is no evidence).
                let mut records = build(&gens);
                for r in &mut records {
                    if r.kind == Kind::Correct {
                        r.actor.kind = ActorKind::Tool;
                    }
                    if let Some(signal) = r.signal.as_mut() {
                        signal.source = SignalSource::Usage;
                    }
                }
                let (recs, states, ignored) = reference(records.clone());
                let reducer = fold(records);
                // Counts it did not keep (evidence against, such as a
                // withdrawal in a rule's group) are left out.
                let ours: Vec<(String, Option<State>)> = reducer
                    .iter()
                    .map(|(r, s)| {
                        let s = s.cloned().map(|mut s| {
                            s.standing.against = 0;
                            s
                        });
                        (r.id.to_string(), s)
                    })
                    .collect();
                let theirs: Vec<(String, Option<State>)> = recs
                    .iter()
                    .zip(&states)
                    .map(|(r, s)| (r.id.to_string(), s.as_deref().cloned()))
                    .collect();
                prop_assert_eq!(ours, theirs);
                let mut ours_ignored = reducer.ignored.clone();
                let mut theirs_ignored = ignored;
                ours_ignored.sort_by(|a, b| a.id.cmp(&b.id).then(a.reason.cmp(&b.reason)));
                theirs_ignored.sort_by(|a, b| a.id.cmp(&b.id).then(a.reason.cmp(&b.reason)));
                prop_assert_eq!(ours_ignored, theirs_ignored);
            }

            /// The order records arrive in changes neither the end state nor
            /// the events, and folding is deterministic.
            #[test]
            fn merge_order_changes_neither_events_nor_end_state(
                gens in proptest::collection::vec(operation(), 1..24),
                seed in any::<u64>(),
            ) {
                let records = build(&gens);
                // Another machine's copy holds every operation, some twice.
                let mut shuffled = records.clone();
                shuffled.extend(records.iter().step_by(3).cloned());
                let mut x = seed | 1;
                for i in (1..shuffled.len()).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    shuffled.swap(i, (x % (i as u64 + 1)) as usize);
                }
                let a = fold_with_history(records.clone());
                let b = fold_with_history(shuffled);
                let c = fold_with_history(records);
                prop_assert_eq!(view(&a, usize::MAX), view(&b, usize::MAX));
                prop_assert_eq!(a.events(), b.events());
                prop_assert_eq!(a.events(), c.events());
                // Every subject's history ends in its status.
                for (r, s) in a.iter() {
                    if let Some(s) = s {
                        let last = a.history(&r.op_id()).last().map(|e| e.to);
                        prop_assert_eq!(last, Some(s.status), "{}", r.id);
                    }
                }
            }
        }
    }
}
