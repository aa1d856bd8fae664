//! Per-subject histories in one pass of the reducer: every status a
//! subject took, each at the instant the log accepted the operation that
//! gave it, as `--as-of` that instant would answer.
//!
//! The reducer applies the log in id order, one instant (the operations
//! the log accepted in one millisecond) at a time. After each instant the
//! status of every subject must be what [`super::fold_as_of`] at that
//! instant gives, which includes the end-of-log passes (settling and
//! disagreements). Running them over the whole log at every instant costs
//! the square of the log; instead the pass keeps the term rules in
//! components of the forms they share (the passes only ever compare rules
//! that share a form) and, for an instant that touched only *quiet*
//! components, reports the reducer's status as it stands. A component is
//! quiet when the passes cannot change a status in it:
//!
//! - at most one distinct rule in it answers (no disagreement is possible);
//! - it holds no correction, import, merge signal or establishment, and no
//!   correction anywhere writes one of its forms (no settling evidence).
//!
//! Any other instant runs the passes over the whole log, so the result is
//! exact on every log; a log whose operations mostly touch rules without
//! rivals or settling evidence (usage signals, notes, keeps, drops) costs
//! one pass.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::fold::{Ledger, Status};
use super::forms::case_key;
use super::id::OpId;
use super::op::{Op, Stated};
use super::record::SignalSource;

/// One status change of a subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Unix milliseconds at which the log accepted the operation that made
    /// it (the log's recorded clock); serialized as RFC 3339 `at`.
    #[serde(rename = "at", serialize_with = "rfc3339")]
    pub at_ms: u64,
    /// The operation that made it.
    pub by: OpId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Status>,
    pub to: Status,
}

fn rfc3339<S: serde::Serializer>(ms: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&super::id::rfc3339_ms(*ms))
}

/// Every subject's history, and the ledger folded to the end of the log.
#[derive(Debug)]
pub struct Histories {
    pub ledger: Ledger,
    /// Each subject's changes, oldest first.
    by_subject: HashMap<OpId, Vec<Change>>,
    /// How many instants ran the passes over the whole log.
    #[cfg_attr(not(test), allow(dead_code, reason = "only the tests read it yet"))]
    pub full_passes: usize,
}

impl Histories {
    /// The changes of one subject, oldest first (none for an operation
    /// that states no subject).
    pub fn of(&self, id: &OpId) -> &[Change] {
        self.by_subject.get(id).map_or(&[], Vec::as_slice)
    }

    /// The status `id` had at `at_ms` (Unix ms), from its history.
    #[cfg(test)]
    pub fn status_at(&self, id: &OpId, at_ms: u64) -> Option<Status> {
        self.of(id)
            .iter()
            .take_while(|c| c.at_ms <= at_ms)
            .last()
            .map(|c| c.to)
    }

    /// How many changes there are in all.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_subject.values().map(Vec::len).sum()
    }
}

/// One change as the kept histories hold it (`fold.history`): when, by
/// which operation, from what, to what.
#[derive(Serialize, Deserialize)]
struct KeptChange(u64, OpId, Option<Status>, Status);

/// The histories as the store keeps them beside the checkpoint
/// (`.git/kapi/fold.history`): every subject's changes, and how many
/// operations the log held when they were made.
#[derive(Serialize, Deserialize)]
struct Kept {
    log_len: usize,
    subjects: Vec<(OpId, Vec<KeptChange>)>,
}

impl Histories {
    /// The histories alone as bytes (MessagePack), for the store to keep
    /// beside the checkpoint: a later read takes them with the fold it
    /// reads through the checkpoint instead of folding the log again.
    pub fn write_kept(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut subjects: Vec<(OpId, Vec<KeptChange>)> = self
            .by_subject
            .iter()
            .map(|(id, changes)| {
                let kept = changes
                    .iter()
                    .map(|c| KeptChange(c.at_ms, c.by, c.from, c.to))
                    .collect();
                (*id, kept)
            })
            .collect();
        subjects.sort_by_key(|s| s.0);
        let kept = Kept {
            log_len: self.ledger.log_len(),
            subjects,
        };
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        rmp_serde::encode::write(&mut out, &kept).map_err(std::io::Error::other)?;
        std::io::Write::flush(&mut out)
    }

    /// The histories kept as `bytes` ([`Histories::write_kept`]) with
    /// `ledger`, the fold of the same log (whole, or a reader's view of
    /// it), if they are that log's: the kept file is derived and read as
    /// hostile, so it is taken only when it decodes, counts the log's
    /// operations, names each subject the ledger holds once and no other,
    /// each history is a chain in time, and each ends at the status the
    /// ledger gives its subject. Otherwise the ledger is handed back (the
    /// caller folds the log again).
    pub fn from_kept(bytes: &[u8], ledger: Ledger) -> Result<Histories, Box<Ledger>> {
        let Ok(kept) = rmp_serde::from_slice::<Kept>(bytes) else {
            return Err(Box::new(ledger));
        };
        if kept.log_len != ledger.log_len() {
            return Err(Box::new(ledger));
        }
        let stated = ledger.iter().filter(|(_, s)| s.is_some()).count();
        if kept.subjects.len() != stated {
            return Err(Box::new(ledger));
        }
        let mut by_subject = HashMap::with_capacity(kept.subjects.len());
        for (subject, changes) in kept.subjects {
            let Some(state) = ledger.state(&subject) else {
                return Err(Box::new(ledger));
            };
            let mut before = None;
            let mut at = 0;
            for c in &changes {
                if c.2 != before || c.0 < at || Some(c.3) == before {
                    return Err(Box::new(ledger));
                }
                before = Some(c.3);
                at = c.0;
            }
            if before != Some(state.status) {
                return Err(Box::new(ledger));
            }
            let changes = changes
                .into_iter()
                .map(|KeptChange(at_ms, by, from, to)| Change {
                    at_ms,
                    by,
                    from,
                    to,
                })
                .collect();
            if by_subject.insert(subject, changes).is_some() {
                return Err(Box::new(ledger));
            }
        }
        Ok(Histories {
            ledger,
            by_subject,
            full_passes: 0,
        })
    }
}

/// The term rules in components of shared forms (union-find over forms).
#[derive(Default)]
struct Components {
    form: HashMap<String, usize>,
    parent: Vec<usize>,
    /// Per root: the subjects (positions) stating a rule in it.
    subjects: Vec<Vec<usize>>,
    /// Per root: whether the passes may change a status in it whatever
    /// the count of rules (a correction, an import, settling evidence).
    loud: Vec<bool>,
    /// The component of each subject position.
    of: HashMap<usize, usize>,
}

impl Components {
    fn find(&mut self, mut c: usize) -> usize {
        while self.parent[c] != c {
            self.parent[c] = self.parent[self.parent[c]];
            c = self.parent[c];
        }
        c
    }

    fn node(&mut self, form: &str) -> usize {
        let key = case_key(form);
        if let Some(&c) = self.form.get(&key) {
            return self.find(c);
        }
        let c = self.parent.len();
        self.parent.push(c);
        self.subjects.push(Vec::new());
        self.loud.push(false);
        self.form.insert(key, c);
        c
    }

    fn union(&mut self, a: usize, b: usize) -> usize {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return a;
        }
        let (big, small) = if self.subjects[a].len() >= self.subjects[b].len() {
            (a, b)
        } else {
            (b, a)
        };
        self.parent[small] = big;
        let moved = std::mem::take(&mut self.subjects[small]);
        self.subjects[big].extend(moved);
        self.loud[big] |= self.loud[small];
        big
    }

    /// Put the subject at `at` stating `forms` in one component; its root.
    fn add<'f>(
        &mut self,
        at: usize,
        forms: impl IntoIterator<Item = &'f str>,
        loud: bool,
    ) -> usize {
        let mut root: Option<usize> = None;
        for f in forms {
            let n = self.node(f);
            root = Some(match root {
                Some(r) => self.union(r, n),
                None => n,
            });
        }
        let root = match root {
            Some(r) => r,
            None => self.node(""),
        };
        self.subjects[root].push(at);
        self.loud[root] |= loud;
        self.of.insert(at, root);
        root
    }

    fn root_of(&mut self, at: usize) -> Option<usize> {
        let c = *self.of.get(&at)?;
        Some(self.find(c))
    }
}

/// What one operation asks of the end of its instant.
enum Touch {
    /// Nothing the passes read.
    None,
    /// The component holding this subject.
    Subject(usize),
    /// The passes over the whole log.
    Everything,
}

/// Fold `ledger` (nothing applied yet) and record every subject's status
/// changes, each at the instant of the operation that made it.
pub fn histories(mut ledger: Ledger) -> Histories {
    ledger.keep_history();
    let mut components = Components::default();
    // Correction wordings (case keys) seen so far: evidence settling reads.
    let mut corrections: Vec<(String, String)> = Vec::new();
    let mut by_subject: HashMap<OpId, Vec<Change>> = HashMap::new();
    let mut full_passes = 0;
    let n = ledger.records().len();
    let mut next = 0;
    while next < n {
        let instant = ledger.records()[next].op_id().unix_ms();
        let from_event = ledger.events().len();
        let mut everything = false;
        // The component roots the instant touched, with the last operation
        // that touched each.
        let mut touched: Vec<(usize, usize)> = Vec::new();
        while next < n && ledger.records()[next].op_id().unix_ms() == instant {
            ledger.apply_next();
            match touch(&ledger, &mut components, &mut corrections, next) {
                Touch::None => {}
                Touch::Subject(at) => {
                    if let Some(root) = components.root_of(at) {
                        touched.push((root, next));
                    }
                }
                Touch::Everything => everything = true,
            }
            next += 1;
        }
        if !everything {
            everything = touched
                .iter()
                .any(|&(root, _)| !quiet(&ledger, &mut components, &corrections, root));
        }
        if everything {
            ledger.finish();
            full_passes += 1;
        } else {
            // Quiet: the passes change nothing, so the reducer's status is
            // the status; report it where an earlier pass said otherwise.
            for &(root, by) in &touched {
                let root = components.find(root);
                for at in components.subjects[root].clone() {
                    ledger.report(at, by);
                }
            }
        }
        // Each subject's status at the end of the instant: its last event,
        // where the instant's statuses are known (the passes ran, or its
        // component was quiet); elsewhere an event reports the reducer's
        // status for a subject the passes had said otherwise about (usage
        // on a contested rule), and the history stands as it was.
        let last = ledger.records()[next - 1].op_id();
        let touched_roots: Vec<usize> = touched.iter().map(|&(t, _)| components.find(t)).collect();
        let mut settled: Vec<(OpId, OpId, Status)> = Vec::new();
        for e in &ledger.events()[from_event..] {
            // A disagreement's change is named by its later rule; one the
            // passes undid, by the instant's last operation.
            let by = if e.by.unix_ms() == instant {
                e.by
            } else {
                last
            };
            match settled.iter_mut().find(|(s, _, _)| *s == e.subject) {
                Some(entry) => *entry = (e.subject, by, e.to),
                None => settled.push((e.subject, by, e.to)),
            }
        }
        for (subject, by, to) in settled {
            let Some(at) = ledger.position(&subject) else {
                continue;
            };
            // A note's status is the reducer's alone.
            let known = everything
                || components
                    .root_of(at)
                    .is_none_or(|r| touched_roots.contains(&r));
            let changes = by_subject.entry(subject).or_default();
            let before = changes.last().map(|c| c.to);
            if !known {
                if let Some(before) = before {
                    ledger.set_reported(at, before);
                }
                continue;
            }
            if before != Some(to) {
                changes.push(Change {
                    at_ms: instant,
                    by,
                    from: before,
                    to,
                });
            }
        }
    }
    ledger.finish();
    Histories {
        ledger,
        by_subject,
        full_passes,
    }
}

/// Record what the operation just applied at `at` states, and what it asks
/// of the end of its instant.
fn touch(
    ledger: &Ledger,
    components: &mut Components,
    corrections: &mut Vec<(String, String)>,
    at: usize,
) -> Touch {
    let record = &ledger.records()[at];
    let Ok(op) = Op::of(record) else {
        return Touch::None;
    };
    if let Some(c) = record.correction.as_deref() {
        corrections.push((case_key(&c.from), case_key(&c.to)));
    }
    match op {
        Op::Reset { .. }
        | Op::Import { .. }
        | Op::Correct { .. }
        | Op::Edit {
            target: Some(_), ..
        } => {
            // Their forms join components that stay loud from now on.
            match op.stated() {
                Stated::Term { preferred, avoid } => {
                    let forms = std::iter::once(preferred).chain(avoid.iter().map(String::as_str));
                    components.add(at, forms, true);
                }
                Stated::Terms(terms) => {
                    let forms = terms.iter().flat_map(|t| {
                        t.preferred
                            .as_deref()
                            .into_iter()
                            .chain(t.avoid.iter().map(String::as_str))
                    });
                    components.add(at, forms, true);
                }
                Stated::Wording(c) => {
                    components.add(at, [c.from.as_str(), c.to.as_str()], true);
                }
                Stated::Nothing => {}
            }
            Touch::Everything
        }
        Op::Observe { .. } | Op::Edit { .. } => match op.stated() {
            Stated::Term { preferred, avoid } => {
                let forms = std::iter::once(preferred).chain(avoid.iter().map(String::as_str));
                components.add(at, forms, false);
                Touch::Subject(at)
            }
            // A note: only the reducer changes it.
            _ => Touch::None,
        },
        Op::Check { .. } => Touch::None,
        Op::Keep { target, .. }
        | Op::Drop { target }
        | Op::Withdraw { target }
        | Op::Widen { target, .. }
        | Op::Signal { target, .. }
        | Op::Establish { target, .. } => {
            let Some(t) = ledger.position(&target) else {
                return Touch::None;
            };
            let evidence = match op {
                Op::Signal { signal, .. } => signal.source != SignalSource::Usage,
                Op::Establish { .. } => true,
                _ => false,
            };
            match components.root_of(t) {
                Some(root) => {
                    let root = components.find(root);
                    components.loud[root] |= evidence;
                    if evidence {
                        Touch::Everything
                    } else if matches!(op, Op::Signal { .. })
                        && !components.loud[root]
                        && !corrected(ledger, components, corrections, root)
                    {
                        // Usage changes no status the reducer holds, and
                        // settling reads it only beside a person signal,
                        // which a component that is not loud lacks: rivals
                        // or not, every status stands.
                        Touch::None
                    } else {
                        Touch::Subject(t)
                    }
                }
                // A note: the passes read nothing of it.
                None => Touch::None,
            }
        }
    }
}

/// Whether a correction's wording writes the preferred form of a rule in
/// the component: settling may read it as a person signal for the rule.
fn corrected(
    ledger: &Ledger,
    components: &mut Components,
    corrections: &[(String, String)],
    root: usize,
) -> bool {
    if corrections.is_empty() {
        return false;
    }
    let root = components.find(root);
    components.subjects[root].iter().any(|&at| {
        match Op::of(&ledger.records()[at]).map(|op| op.stated()) {
            Ok(Stated::Term { preferred, .. }) => {
                let key = case_key(preferred);
                corrections
                    .iter()
                    .any(|(from, to)| from.contains(&key) || to.contains(&key))
            }
            _ => true,
        }
    })
}

/// Whether the end-of-log passes can change no status in the component.
fn quiet(
    ledger: &Ledger,
    components: &mut Components,
    corrections: &[(String, String)],
    root: usize,
) -> bool {
    let root = components.find(root);
    if components.loud[root] {
        return false;
    }
    if corrected(ledger, components, corrections, root) {
        return false;
    }
    let mut answering: Option<(&str, &[String])> = None;
    for &at in &components.subjects[root] {
        let record = &ledger.records()[at];
        let Some(state) = ledger.state_at(at) else {
            continue;
        };
        let Ok(Stated::Term { preferred, avoid }) = Op::of(record).map(|op| op.stated()) else {
            return false;
        };
        if matches!(state.status, Status::Suggested | Status::Established) {
            match answering {
                Some(rule) if rule != (preferred, avoid) => return false,
                _ => answering = Some((preferred, avoid)),
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::fold::fold_as_of;
    use crate::ops::fold::tests::reducer::{build, operation};
    use crate::ops::id::EPOCH_MS;
    use crate::ops::record::Record;
    use proptest::prelude::*;

    /// The log with its operations packed `per` to an instant (ids keep
    /// their order; targets follow their ids).
    fn packed(records: Vec<Record>, per: u64) -> Vec<Record> {
        let mut renamed: HashMap<String, String> = HashMap::new();
        let mut out = Vec::new();
        for (n, mut r) in records.into_iter().enumerate() {
            let n = n as u64;
            let id = OpId::mint(EPOCH_MS + 1000 * (n / per), u128::from(n + 1), None)
                .unwrap()
                .to_string();
            renamed.insert(r.id.to_string(), id.clone());
            r.id = id.into();
            // Every other signal counts usage, moving between the forms.
            if let Some(signal) = r.signal.as_mut()
                && n.is_multiple_of(2)
            {
                signal.source = SignalSource::Usage;
                signal.preferred = n % 3;
                signal.avoided = n % 5;
            }
            for field in [&mut r.target, &mut r.before] {
                if let Some(t) = field.as_mut() {
                    *t = renamed
                        .get(t.as_str())
                        .cloned()
                        .unwrap_or_else(|| t.to_string())
                        .into();
                }
            }
            out.push(r);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// The one-pass history gives, at every instant of the log, the
        /// status a fold as of that instant gives every subject.
        #[test]
        fn the_one_pass_history_is_the_fold_as_of_every_instant(
            gens in proptest::collection::vec(operation(), 1..28),
            per in 1u64..4,
        ) {
            let records = packed(build(&gens), per);
            let h = histories(Ledger::new(records.clone()));
            let end = crate::ops::fold(records.clone());
            let mut instants: Vec<u64> = records.iter().map(|r| r.op_id().unix_ms()).collect();
            instants.dedup();
            for &t in &instants {
                let as_of = fold_as_of(records.clone(), t);
                for (r, s) in as_of.iter() {
                    let id = r.op_id();
                    prop_assert_eq!(
                        h.status_at(&id, t),
                        s.map(|s| s.status),
                        "{} at {}: {:?}", r.id, t, h.of(&id)
                    );
                }
            }
            // The ledger it hands back is the fold of the whole log.
            for (r, s) in end.iter() {
                prop_assert_eq!(h.ledger.state(&r.op_id()).map(|s| s.status), s.map(|s| s.status));
            }
            // Each history is a chain.
            for r in &records {
                let mut at = None;
                for c in h.of(&r.op_id()) {
                    prop_assert_eq!(c.from, at);
                    at = Some(c.to);
                }
            }
        }
    }

    /// Usage counted for a contested rule changes no status: the history
    /// keeps it contested (the reducer reports its own status for the
    /// rule the signal names, which the pass over the log had contested).
    #[test]
    fn usage_on_a_contested_rule_leaves_its_history_as_it_was() {
        use crate::ops::fold::tests::reducer::Gen;
        let gens = [
            Gen::Keep(0),
            Gen::Keep(0),
            Gen::Term(0, 0, false),
            Gen::Term(0, 0, false),
            Gen::Term(0, 0, false),
            Gen::Term(1, 0, false),
            Gen::Signal(0),
            Gen::Drop(6),
            Gen::Signal(2),
        ];
        let records = packed(build(&gens), 1);
        let h = histories(Ledger::new(records.clone()));
        let rule = records[2].op_id();
        let last = records.last().unwrap().op_id().unix_ms();
        assert_eq!(h.status_at(&rule, last), Some(Status::Contested));
        assert_eq!(
            fold_as_of(records.clone(), last)
                .state(&rule)
                .map(|s| s.status),
            Some(Status::Contested)
        );
        assert_eq!(h.of(&rule).len(), 2, "{:?}", h.of(&rule));
    }

    /// 100,000 usage signals on one rule and a few hundred rules without
    /// rivals: no instant needs the passes over the whole log.
    #[test]
    fn signals_on_rules_without_rivals_need_no_pass_over_the_log() {
        use crate::ops::record::{Actor, ActorKind, Kind, Signal, Subject};
        let mut records = Vec::new();
        for i in 0..300u64 {
            let id = OpId::mint(EPOCH_MS + i, u128::from(i), None).unwrap();
            records.push(Record {
                id: id.to_string().into(),
                at: id.instant().into(),
                subject: Some(Box::new(Subject::Term {
                    preferred: format!("Term{i}x"),
                    avoid: vec![format!("Term{i} x")],
                })),
                ..Record::new(
                    "p",
                    Actor {
                        kind: ActorKind::Agent,
                        name: "a".into(),
                        session: Some("s".into()),
                    },
                    Kind::Observe,
                )
            });
        }
        for i in 0..2_000u64 {
            let id = OpId::mint(EPOCH_MS + 1_000 + i, u128::from(i), None).unwrap();
            records.push(Record {
                id: id.to_string().into(),
                at: id.instant().into(),
                target: Some(records[(i % 300) as usize].id.clone()),
                signal: Some(Box::new(Signal {
                    source: SignalSource::Usage,
                    preferred: i % 7,
                    avoided: i % 3,
                    commit: None,
                    pr: None,
                    merger: None,
                })),
                ..Record::new("p", Actor::tool("check"), Kind::Signal)
            });
        }
        let h = histories(Ledger::new(records.clone()));
        assert_eq!(h.full_passes, 0);
        assert_eq!(h.len(), 300);
        assert_eq!(h.of(&records[0].op_id())[0].to, Status::Suggested);
    }
}
