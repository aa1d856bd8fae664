//! The folded ledger as bytes, for the checkpoint the store keeps beside
//! the log (`.git/kapi/fold.checkpoint`, see `store::checkpoint`): this
//! file writes two MessagePack values, the records and then the reducer's
//! state (`ignored`, `Folding` through serde's derive, and `view`), so a
//! field added to [`Ledger`] is written here by hand, and one added to
//! `Folding` is in the checkpoint with no code here; and a reader's view
//! that holds only what states a subject or imports a file.
//!
//! A checkpoint is derived: [`fingerprint`] names the code that folded it
//! (kapi's version, the checkpoint's format and the text of every source
//! of the fold), `context::checkpointed` adds the sources of how a reader
//! reads the log and the axes, and a checkpoint written by other code is
//! not read: the log is folded again, silently.

use std::sync::OnceLock;

use std::io::Write;

use serde::{Deserialize, Serialize};

use super::settle::Settling;
use super::{Folding, Ignored, Ledger, Record};
use crate::ops::axes::Axes;
use crate::ops::forms::case_key;
use crate::ops::record::Kind;

/// The layout of the checkpoint; raise it when the bytes change meaning.
pub const FORMAT: u32 = 3;

/// The sources of the fold: a change to any of them (a new rule of the
/// reducer, a new field of a record) makes every existing checkpoint
/// stale. The sources of how a reader reads the log are named where it
/// reads it (`context::checkpointed`). build.rs computes their
/// [`checksum`] (`KAPI_CODE_FOLD`); a test checks its list against this
/// one.
#[cfg(test)]
pub(crate) const SOURCES: &[&str] = &[
    include_str!("../fold.rs"),
    include_str!("state.rs"),
    include_str!("disagree.rs"),
    include_str!("settle.rs"),
    include_str!("checkpoint.rs"),
    include_str!("../policy.rs"),
    include_str!("../op.rs"),
    include_str!("../forms.rs"),
    include_str!("../record.rs"),
    include_str!("../slim.rs"),
    include_str!("../id.rs"),
    include_str!("../scope.rs"),
    include_str!("../axes.rs"),
    include_str!("../trust.rs"),
    include_str!("../../formats/allowed_signers.rs"),
];

/// What folded a checkpoint: kapi's version, the format and a checksum of
/// the fold's sources. A checkpoint is read only by the same.
pub fn fingerprint() -> &'static str {
    static FINGERPRINT: OnceLock<String> = OnceLock::new();
    FINGERPRINT.get_or_init(|| {
        format!(
            "kapi {} fold {FORMAT} sources {}",
            env!("CARGO_PKG_VERSION"),
            env!("KAPI_CODE_FOLD")
        )
    })
}

/// A CRC-32 of source texts, each after its length: what a fingerprint
/// names them by (computed by build.rs, in hex, for the program; here
/// for the tests that check build.rs's lists).
#[cfg(test)]
pub fn checksum(sources: &[&str]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    for source in sources {
        crc.update(&(source.len() as u64).to_le_bytes());
        crc.update(source.as_bytes());
    }
    crc.finalize()
}

/// The reducer's state as the checkpoint holds it, after the records.
#[derive(Serialize)]
struct StateRef<'a> {
    ignored: &'a [Ignored],
    fold: &'a Folding,
    view: bool,
}

#[derive(Deserialize)]
struct State {
    ignored: Vec<Ignored>,
    fold: Folding,
    view: bool,
}

/// Write one MessagePack value through a buffer: the encoder writes a few
/// bytes at a time, which reach `out` (a checksum and the file) in large
/// blocks.
fn write_value(value: &impl Serialize, out: &mut dyn Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    rmp_serde::encode::write_named(&mut out, value).map_err(std::io::Error::other)?;
    out.flush()
}

/// The records as one MessagePack array, the same bytes serde writes
/// ([`write_value`]) but each record's own fields and its actor, signal
/// and check run encoded here (serde's encoder spent 3,100 instructions a
/// record, more than the fold); the rarer fields (subject, correction,
/// evidence, basis, scope, a run's findings) still go through serde. A
/// test holds the bytes to serde's.
fn write_records(records: &[Record], out: &mut dyn Write) -> std::io::Result<()> {
    const FLUSH: usize = 1 << 16;
    let mut buf = Vec::with_capacity(FLUSH + 4096);
    mp::array_len(&mut buf, array_len(records.len())?);
    for record in records {
        encode_record(record, &mut buf).map_err(std::io::Error::other)?;
        if buf.len() >= FLUSH {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()
}

fn array_len(n: usize) -> std::io::Result<u32> {
    u32::try_from(n).map_err(std::io::Error::other)
}

/// A key of a struct, as serde's encoder writes it (every key is short).
#[inline]
fn key(out: &mut Vec<u8>, name: &'static str) {
    debug_assert!(name.len() < 32);
    out.push(0xa0 | name.len() as u8);
    out.extend_from_slice(name.as_bytes());
}

#[inline]
fn text(out: &mut Vec<u8>, value: &str) -> Result<(), rmp_serde::encode::Error> {
    mp::str_len(out, count(value.len())?);
    out.extend_from_slice(value.as_bytes());
    Ok(())
}

fn count(n: usize) -> Result<u32, rmp_serde::encode::Error> {
    u32::try_from(n).map_err(|_| rmp_serde::encode::Error::Syntax("a length over 4 GiB".into()))
}

/// MessagePack's markers, each the smallest that holds the value (as
/// `rmp` chooses them).
mod mp {
    #[inline]
    pub fn uint(out: &mut Vec<u8>, n: u64) {
        if n < 128 {
            out.push(n as u8);
        } else if n < 1 << 8 {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n < 1 << 16 {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n < 1 << 32 {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A length under `fix` in the marker's low bits, else after `wide`'s
    /// markers of 8 (if `eight`), 16 and 32 bits.
    #[inline]
    fn len(out: &mut Vec<u8>, n: u32, fix: (u8, u32), eight: Option<u8>, wide: (u8, u8)) {
        if n < fix.1 {
            out.push(fix.0 | n as u8);
        } else if let Some(marker) = eight.filter(|_| n < 1 << 8) {
            out.extend_from_slice(&[marker, n as u8]);
        } else if n < 1 << 16 {
            out.push(wide.0);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(wide.1);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }

    #[inline]
    pub fn str_len(out: &mut Vec<u8>, n: u32) {
        len(out, n, (0xa0, 32), Some(0xd9), (0xda, 0xdb));
    }

    #[inline]
    pub fn map_len(out: &mut Vec<u8>, n: u32) {
        len(out, n, (0x80, 16), None, (0xde, 0xdf));
    }

    #[inline]
    pub fn array_len(out: &mut Vec<u8>, n: u32) {
        len(out, n, (0x90, 16), None, (0xdc, 0xdd));
    }

    #[inline]
    pub fn bool(out: &mut Vec<u8>, b: bool) {
        out.push(if b { 0xc3 } else { 0xc2 });
    }
}

fn serde_value(out: &mut Vec<u8>, value: &impl Serialize) -> Result<(), rmp_serde::encode::Error> {
    rmp_serde::encode::write_named(out, value)
}

/// One record, as `rmp_serde::encode::write_named` writes it: a map of
/// the fields serde's derive does not skip, in the order they are declared.
fn encode_record(r: &Record, out: &mut Vec<u8>) -> Result<(), rmp_serde::encode::Error> {
    let fields = 6
        + usize::from(r.subject.is_some())
        + usize::from(r.correction.is_some())
        + usize::from(!r.evidence.is_empty())
        + usize::from(!r.basis.is_empty())
        + usize::from(!r.scope.is_empty())
        + usize::from(r.target.is_some())
        + usize::from(r.before.is_some())
        + usize::from(r.note.is_some())
        + usize::from(r.address.is_some())
        + usize::from(r.signal.is_some())
        + usize::from(!r.because.is_empty())
        + usize::from(r.check.is_some())
        + usize::from(r.advisory)
        + usize::from(r.sig.is_some());
    mp::map_len(out, fields as u32);
    key(out, "v");
    mp::uint(out, u64::from(r.v));
    key(out, "id");
    text(out, &r.id)?;
    key(out, "project");
    text(out, &r.project)?;
    key(out, "actor");
    let actor = &r.actor;
    mp::map_len(out, 2 + u32::from(actor.session.is_some()));
    key(out, "kind");
    text(out, actor.kind.as_str())?;
    key(out, "name");
    text(out, &actor.name)?;
    if let Some(session) = &actor.session {
        key(out, "session");
        text(out, session)?;
    }
    key(out, "kind");
    // The kinds are persisted as `context.<kind>`.
    let kind = r.kind.as_str();
    mp::str_len(out, ("context.".len() + kind.len()) as u32);
    out.extend_from_slice(b"context.");
    out.extend_from_slice(kind.as_bytes());
    if let Some(subject) = &r.subject {
        key(out, "subject");
        serde_value(out, subject)?;
    }
    if let Some(correction) = &r.correction {
        key(out, "correction");
        serde_value(out, correction)?;
    }
    if !r.evidence.is_empty() {
        key(out, "evidence");
        serde_value(out, &r.evidence)?;
    }
    if !r.basis.is_empty() {
        key(out, "basis");
        serde_value(out, &r.basis)?;
    }
    if !r.scope.is_empty() {
        key(out, "scope");
        serde_value(out, &r.scope)?;
    }
    if let Some(target) = &r.target {
        key(out, "target");
        text(out, target)?;
    }
    if let Some(before) = &r.before {
        key(out, "before");
        text(out, before)?;
    }
    if let Some(note) = &r.note {
        key(out, "note");
        text(out, note)?;
    }
    key(out, "at");
    text(out, &r.at)?;
    if let Some(address) = &r.address {
        key(out, "address");
        text(out, address)?;
    }
    if let Some(signal) = &r.signal {
        key(out, "signal");
        encode_signal(signal, out)?;
    }
    if !r.because.is_empty() {
        key(out, "because");
        serde_value(out, &r.because)?;
    }
    if let Some(check) = &r.check {
        key(out, "check");
        mp::map_len(out, 4);
        key(out, "hook");
        text(out, &check.hook)?;
        key(out, "files");
        mp::array_len(out, count(check.files.len())?);
        for file in &check.files {
            text(out, file)?;
        }
        key(out, "failing");
        serde_value(out, &check.failing)?;
        key(out, "clean");
        mp::bool(out, check.clean);
    }
    if r.advisory {
        key(out, "advisory");
        mp::bool(out, true);
    }
    if let Some(sig) = &r.sig {
        key(out, "sig");
        text(out, sig)?;
    }
    Ok(())
}

fn encode_signal(
    s: &crate::ops::record::Signal,
    out: &mut Vec<u8>,
) -> Result<(), rmp_serde::encode::Error> {
    use crate::ops::record::SignalSource;
    let fields = 3
        + u32::from(s.commit.is_some())
        + u32::from(s.pr.is_some())
        + u32::from(s.merger.is_some());
    mp::map_len(out, fields);
    key(out, "source");
    text(
        out,
        match s.source {
            SignalSource::Usage => "usage",
            SignalSource::Merge => "merge",
            SignalSource::Applied => "applied",
        },
    )?;
    key(out, "preferred");
    mp::uint(out, s.preferred);
    key(out, "avoided");
    mp::uint(out, s.avoided);
    for (name, value) in [("commit", &s.commit), ("pr", &s.pr), ("merger", &s.merger)] {
        if let Some(value) = value {
            key(out, name);
            text(out, value)?;
        }
    }
    Ok(())
}

/// Add the case keys of the forms `r` states to `forms`: a rule's, each
/// entry of an imported list, a correction's wording.
fn add_forms(r: &Record, forms: &mut std::collections::HashSet<String>) {
    use crate::ops::op::{Op, Stated};
    let mut add = |preferred: &str, avoid: &[String]| {
        forms.insert(case_key(preferred));
        forms.extend(avoid.iter().map(|a| case_key(a)));
    };
    match Op::of(r).map_or(Stated::Nothing, |op| op.stated()) {
        Stated::Term { preferred, avoid } => add(preferred, avoid),
        Stated::Terms(terms) => {
            for t in terms {
                add(t.preferred.as_deref().unwrap_or(""), &t.avoid);
            }
        }
        Stated::Wording(c) => add(&c.to, std::slice::from_ref(&c.from)),
        Stated::Nothing => {}
    }
}

fn write_state(
    ignored: &[Ignored],
    fold: &Folding,
    view: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    write_value(
        &StateRef {
            ignored,
            fold,
            view,
        },
        out,
    )
}

impl Ledger {
    /// A reader's view of a finished ledger: the records that state a
    /// subject (with their states) or import a file, and everything the
    /// fold ignored. Rules, notes, their states and imports answer as in
    /// the whole ledger; nothing can be applied to it.
    pub fn view(&self) -> Ledger {
        self.view_keeping(|_| false)
    }

    /// The reader's view with every decision beside it: every record but
    /// the usage signals and check runs (most of a long log), so a listing
    /// of any other kind (`kapi context log --kind drop`) reads it instead
    /// of the whole ledger. It answers as the whole ledger does for each
    /// record it holds, and takes nothing more.
    pub fn decisions(&self) -> Ledger {
        self.view_keeping(|r| !matches!(r.kind, Kind::Signal | Kind::Check))
    }

    /// Whether a listing of `kind` finds every record of it in
    /// [`Ledger::decisions`].
    pub fn decisions_hold(kind: Kind) -> bool {
        !matches!(kind, Kind::Signal | Kind::Check)
    }

    /// A view keeping what states a subject or imports a file, and what
    /// `also` asks for.
    fn view_keeping(&self, also: impl Fn(&Record) -> bool) -> Ledger {
        let keep: Vec<usize> = (0..self.fold.applied.min(self.records.len()))
            .filter(|&i| {
                self.fold.states[i].is_some()
                    || self.records[i].kind == Kind::Import
                    || also(&self.records[i])
            })
            .collect();
        let fold = super::Folding {
            states: keep.iter().map(|&i| self.fold.states[i].clone()).collect(),
            keys: keep.iter().map(|&i| self.fold.keys[i]).collect(),
            kept_at: vec![None; keep.len()],
            imported: Default::default(),
            addresses: self.fold.addresses.clone(),
            ignored_at: vec![usize::MAX; self.ignored.len()],
            applied: keep.len(),
            evidence: Vec::new(),
            missing: self.fold.missing.clone(),
            events: None,
            reported: keep.iter().map(|&i| self.fold.reported[i]).collect(),
            replaying: false,
            axes: self.fold.axes.clone(),
            settling: self.fold.settling,
            signed: self.view_signed(&keep),
            trust: self.fold.trust.clone(),
            verdicts: Default::default(),
            whole: self.records.len(),
            newest: self.records.last().map(|r| r.id.clone()),
            copies: Vec::new(),
            // Finished: `finish` does nothing more.
            undo: Some(Vec::new()),
        };
        Ledger {
            records: keep.iter().map(|&i| self.records[i].clone()).collect(),
            ignored: self.ignored.clone(),
            fold,
            view: true,
        }
    }

    /// Who signed what a reader of the view asks about: the records it
    /// keeps (imports) and the decision that put each of their subjects
    /// in force, not every signed decision of the log (a long log holds
    /// thousands of keeps; the view is read by every check and hook).
    fn view_signed(
        &self,
        keep: &[usize],
    ) -> std::collections::BTreeMap<compact_str::CompactString, compact_str::CompactString> {
        if self.fold.signed.is_empty() {
            return Default::default();
        }
        let mut wanted = std::collections::BTreeSet::new();
        for &i in keep {
            wanted.insert(self.records[i].op_id());
            if let Some(decided) = self.fold.states[i].as_ref().and_then(|s| s.decided_by) {
                wanted.insert(decided);
            }
        }
        self.fold
            .signed
            .iter()
            .filter(|(id, _)| {
                super::super::id::OpId::parse(id.as_str()).is_ok_and(|id| wanted.contains(&id))
            })
            .map(|(id, by)| (id.clone(), by.clone()))
            .collect()
    }

    /// Take `added` (the operations the logs gained since the view's tips)
    /// into a reader's view when the fold would change nothing the view
    /// holds for them, so the view at the new tips is this one with them:
    ///
    /// - check runs it admits: none named by an operation before the log
    ///   held it, none repeating a content address (its own or another's).
    ///   Their addresses join the view's; nothing else changes.
    /// - suggestions that stand alone ([`Ledger::alone`]) and sort after
    ///   every operation the whole ledger held: each is taken with the
    ///   state a fold of it alone gives, which is the state the fold of
    ///   the whole log gives it, and changes no other.
    ///
    /// All or nothing: `false`, and the view unchanged, otherwise (the
    /// reader then applies them to the base). An agent's note is the
    /// common write between two reads: at a million operations, taking it
    /// here spares the next hook a decode of the whole ledger.
    pub fn take_added(&mut self, added: &[Record]) -> bool {
        use crate::ops::id::{is_id, key};
        if !self.view || (self.fold.whole > 0 && self.fold.newest.is_none()) {
            return false;
        }
        let count = added.len();
        let mut added: Vec<&Record> = added.iter().collect();
        added.sort_by(|a, b| a.id.cmp(&b.id));
        let mut newest = self.fold.newest.clone();
        let mut addresses = std::collections::BTreeSet::new();
        let mut forms = None;
        let mut taken = Vec::new();
        for r in added {
            if !is_id(&r.id) || self.fold.missing.contains(&key(&r.id)) {
                return false;
            }
            match r.kind {
                Kind::Check => {
                    if let Some(a) = &r.address
                        && (self.fold.addresses.contains(a) || !addresses.insert(a.clone()))
                    {
                        return false;
                    }
                }
                Kind::Observe => {
                    if newest.as_deref().is_some_and(|n| key(n) >= key(&r.id)) {
                        return false;
                    }
                    let forms = forms.get_or_insert_with(|| self.stated_forms());
                    let Some((state, reported)) = self.alone(r, forms) else {
                        return false;
                    };
                    add_forms(r, forms);
                    taken.push((r, state, reported));
                }
                _ => return false,
            }
            if newest.as_deref().is_none_or(|n| key(n) < key(&r.id)) {
                newest = Some(r.id.clone());
            }
        }
        self.fold.whole += count;
        for (r, state, reported) in taken {
            self.fold.keys.push(key(&r.id));
            self.fold.states.push(Some(state));
            self.fold.kept_at.push(None);
            self.fold.reported.push(reported);
            self.records.push(r.clone());
        }
        self.fold.applied = self.records.len();
        self.fold.addresses.extend(addresses);
        self.fold.newest = newest;
        true
    }

    /// The case keys of every form a subject in the view states: the
    /// forms a new rule is compared on.
    fn stated_forms(&self) -> std::collections::HashSet<String> {
        let mut forms = std::collections::HashSet::new();
        for r in &self.records {
            add_forms(r, &mut forms);
        }
        forms
    }

    /// Whether the suggestion `r` stands alone in this view, and if so its
    /// state and reported status as a fold of it alone gives them. It
    /// stands alone when nothing the end-of-log passes compare can take it
    /// in: it names no operation, carries no content address and wants no
    /// signature; it states a note or a pair (which they never compare),
    /// or a term rule none of whose forms (`forms`, by case) any subject
    /// of the view states, and that no correction the log holds writes
    /// toward or away from. Then it joins no group, meets no rival, and no
    /// evidence names it (an operation naming it before it existed is in
    /// `missing`, which the caller refuses).
    fn alone(
        &self,
        r: &Record,
        forms: &std::collections::HashSet<String>,
    ) -> Option<(Box<super::State>, Option<super::Status>)> {
        use crate::ops::forms::{writes_avoided, writes_preferred};
        use crate::ops::op::{Op, Stated};
        if r.target.is_some()
            || r.before.is_some()
            || r.address.is_some()
            || crate::ops::trust::wanted(r).is_some()
        {
            return None;
        }
        match Op::of(r).ok()?.stated() {
            Stated::Term { preferred, avoid } => {
                let mut keys = avoid
                    .iter()
                    .map(|a| case_key(a))
                    .chain([case_key(preferred)]);
                if keys.any(|k| forms.contains(&k)) {
                    return None;
                }
                let writes = |text: &str| {
                    writes_preferred(text, preferred, avoid)
                        || writes_avoided(text, preferred, avoid)
                };
                let corrected = self
                    .records
                    .iter()
                    .filter_map(|c| c.correction.as_deref())
                    .any(|c| writes(&c.from) || writes(&c.to));
                if corrected {
                    return None;
                }
            }
            Stated::Nothing => {}
            Stated::Terms(_) | Stated::Wording(_) => return None,
        }
        let alone = Ledger::new(vec![r.clone()])
            .with_axes(self.fold.axes.clone())
            .with_settling(self.fold.settling)
            .with_trust(self.fold.trust.clone())
            .folded();
        if !alone.ignored.is_empty() {
            return None;
        }
        let state = alone.fold.states.into_iter().next()??;
        Some((state, alone.fold.reported.first().copied().flatten()))
    }

    /// Whether this is a reader's view ([`Ledger::view`]).
    pub fn is_view(&self) -> bool {
        self.view
    }

    /// The key of the newest record the ledger holds: an operation that
    /// sorts after it can be applied; one that sorts before needs a fold
    /// from the start.
    pub fn newest_key(&self) -> Option<u128> {
        self.fold.keys.last().copied()
    }

    /// The ledger as checkpoint bytes: two MessagePack values with field
    /// names (the records' optional fields are left out when empty, which
    /// only a self-describing format reads back; JSON reads 2-3x slower),
    /// the records and then the reducer's state, so the records can be
    /// written while the fold runs ([`Ledger::folded_saving`]).
    pub fn to_checkpoint(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_checkpoint(&mut out)
            .expect("a ledger serializes");
        out
    }

    /// [`Ledger::to_checkpoint`], written to `out` as it is made.
    pub fn write_checkpoint(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write_records(&self.records, out)?;
        write_state(&self.ignored, &self.fold, self.view, out)
    }

    /// Apply every record and the end-of-log passes (as
    /// [`Ledger::folded`]), while `save` writes the checkpoint on another
    /// thread: `save` is handed the function that writes the ledger's
    /// bytes to its output. The records go out while the fold runs (it
    /// only reads them), the reducer's state once the fold is done, so on
    /// two cores a cold read pays for the fold or the write, not both.
    pub fn folded_saving<S>(mut self, save: S) -> Ledger
    where
        S: FnOnce(&mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>) + Send,
    {
        if self.view {
            return self;
        }
        {
            let Ledger {
                records,
                ignored,
                fold,
                ..
            } = &mut self;
            let records: &[Record] = records;
            let (done, finished) = std::sync::mpsc::sync_channel::<(&[Ignored], &Folding)>(1);
            std::thread::scope(|scope| {
                scope.spawn(move || {
                    save(&mut |out: &mut dyn Write| {
                        write_records(records, out)?;
                        let (ignored, fold) = finished.recv().map_err(std::io::Error::other)?;
                        write_state(ignored, fold, false, out)
                    })
                });
                while fold.applied < records.len() {
                    fold.apply_next(records, ignored);
                }
                fold.finish(records);
                // The writer may have given up (no room, say): nothing waits.
                let _ = done.send((&*ignored, &*fold));
            });
        }
        self
    }

    /// A ledger from checkpoint bytes, comparing scopes on `axes` (those it
    /// was folded with: the checkpoint's fingerprint covers them), or
    /// `None` when they do not hold a consistent one, or one folded with
    /// another `settling` (the caller folds the log again).
    pub fn from_checkpoint(bytes: &[u8], axes: Axes, settling: Settling) -> Option<Ledger> {
        let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
        let records = Vec::<Record>::deserialize(&mut de).ok()?;
        let state = State::deserialize(&mut de).ok()?;
        if state.fold.settling != settling {
            return None;
        }
        let mut ledger = Ledger {
            records,
            ignored: state.ignored,
            fold: state.fold,
            view: state.view,
        };
        ledger.fold.axes = axes;
        let n = ledger.records.len();
        let f = &mut ledger.fold;
        if f.states.len() != n
            || f.kept_at.len() != n
            || f.reported.len() != n
            || f.applied > n
            || f.ignored_at.len() != ledger.ignored.len()
        {
            return None;
        }
        // One pass: every id valid, strictly in order, as numbers.
        let mut keys = Vec::with_capacity(n);
        for r in &ledger.records {
            if !super::super::id::is_id(&r.id) {
                return None;
            }
            let key = super::super::id::key(&r.id);
            if keys.last().is_some_and(|&last| last >= key) {
                return None;
            }
            keys.push(key);
        }
        f.keys = keys;
        Some(ledger)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fold;
    use super::*;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, ActorKind, Subject};

    #[test]
    fn the_code_build_rs_names_is_the_code_the_program_holds() {
        // build.rs lists the files by path; the code lists them by
        // include_str!: a file added to one list and not the other, or a
        // file changed without build.rs seeing it, fails here.
        let hex = |sources: &[&str]| format!("{:08x}", checksum(sources));
        assert_eq!(hex(SOURCES), env!("KAPI_CODE_FOLD"));
        assert_eq!(
            hex(crate::context::checkpointed::READER_SOURCES),
            env!("KAPI_CODE_READER")
        );
        assert_eq!(
            hex(&[include_str!("../history.rs")]),
            env!("KAPI_CODE_HISTORY")
        );
        assert_eq!(
            hex(crate::check::matcher::PLAN_SOURCES),
            env!("KAPI_CODE_PLAN")
        );
    }

    fn op(n: u64, kind: Kind, actor: ActorKind) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new(
                "p",
                Actor {
                    kind: actor,
                    name: "x".into(),
                    session: Some("s".into()),
                },
                kind,
            )
        }
    }

    /// An agent's note.
    fn note(n: u64) -> Record {
        Record {
            subject: Some(Box::new(Subject::Note {
                text: "a note".into(),
            })),
            ..op(n, Kind::Observe, ActorKind::Agent)
        }
    }

    /// An operation acting on `target`.
    fn on(target: &Record, n: u64, kind: Kind, actor: ActorKind) -> Record {
        Record {
            target: Some(target.id.clone()),
            ..op(n, kind, actor)
        }
    }

    fn answers(l: &Ledger) -> Vec<(String, Option<super::super::State>)> {
        l.iter()
            .filter(|(_, s)| s.is_some())
            .map(|(r, s)| (r.id.to_string(), s.cloned()))
            .collect()
    }

    /// Records with every field set or left out, strings and numbers of
    /// every width MessagePack marks differently.
    fn every_shape(text: &str, n: u64) -> Vec<Record> {
        use crate::ops::record::{
            Basis, CheckFailure, CheckRun, Correction, Evidence, Scope, Signal, SignalSource, Slim,
        };
        let mut full = note(1);
        full.actor.session = Some(text.into());
        full.actor.name = text.into();
        full.correction = Some(Box::new(Correction {
            from: text.into(),
            to: "b".into(),
        }));
        full.evidence = Slim::new(vec![Evidence {
            quote: Some(text.into()),
            ..Evidence::default()
        }]);
        full.basis = Slim::new(Basis {
            commit: Some("c".into()),
        });
        full.scope = Slim::new(Scope {
            point: [("age".to_string(), text.to_string())].into(),
            ..Scope::default()
        });
        full.target = Some(text.into());
        full.before = Some("b".into());
        full.note = Some(text.into());
        full.address = Some(text.into());
        full.because = Slim::new(vec![text.into(), String::new()]);
        full.advisory = true;
        full.sig = Some(text.into());
        let mut signal = on(&full, 2, Kind::Signal, ActorKind::Tool);
        signal.signal = Some(Box::new(Signal {
            source: SignalSource::Merge,
            preferred: n,
            avoided: n / 3,
            commit: Some(text.into()),
            pr: None,
            merger: Some("m".into()),
        }));
        let mut usage = on(&full, 3, Kind::Signal, ActorKind::Tool);
        usage.signal = Some(Box::new(Signal {
            source: SignalSource::Usage,
            preferred: n % 200,
            avoided: u64::from(n as u16),
            commit: None,
            pr: Some(text.into()),
            merger: None,
        }));
        let mut check = op(4, Kind::Check, ActorKind::Agent);
        check.check = Some(Box::new(CheckRun {
            hook: "stop".into(),
            files: vec![text.into(); (n % 40) as usize],
            failing: vec![CheckFailure {
                path: "p".into(),
                rule: text.into(),
                quote: "q".into(),
            }],
            clean: n.is_multiple_of(2),
        }));
        let mut clean = op(5, Kind::Check, ActorKind::Person);
        clean.check = Some(Box::new(CheckRun::default()));
        let kinds = Kind::ALL.map(|kind| op(6, kind, ActorKind::Person));
        [full, signal, usage, check, clean]
            .into_iter()
            .chain(kinds)
            .collect()
    }

    fn serde_bytes(records: &[Record]) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_value(&records, &mut bytes).unwrap();
        bytes
    }

    #[test]
    fn records_are_written_as_serde_writes_them() {
        for len in [0, 1, 31, 32, 255, 256, 65_535, 65_536, 70_000] {
            for n in [
                0,
                127,
                128,
                255,
                256,
                65_535,
                65_536,
                u64::from(u32::MAX),
                u64::MAX,
            ] {
                let records = every_shape(&"é".repeat(len / 2), n);
                let mut bytes = Vec::new();
                write_records(&records, &mut bytes).unwrap();
                assert!(
                    bytes == serde_bytes(&records),
                    "strings of {len} bytes, {n}"
                );
            }
        }
        // Enough records to flush the buffer on the way, and an array of
        // more than 65,535.
        let many: Vec<Record> = (0..70_000)
            .map(|n| op(n + 10, Kind::Check, ActorKind::Tool))
            .collect();
        let mut bytes = Vec::new();
        write_records(&many, &mut bytes).unwrap();
        assert!(bytes == serde_bytes(&many));
    }

    proptest::proptest! {
        #[test]
        fn any_record_is_written_as_serde_writes_it(text in ".{0,40}", n in proptest::prelude::any::<u64>()) {
            let records = every_shape(&text, n);
            let mut bytes = Vec::new();
            write_records(&records, &mut bytes).unwrap();
            proptest::prop_assert!(bytes == serde_bytes(&records));
        }
    }

    #[test]
    fn a_fold_that_writes_its_checkpoint_meanwhile_writes_the_folded_ledger() {
        let a = note(1);
        let keep = on(&a, 2, Kind::Keep, ActorKind::Person);
        let drop = on(&a, 3, Kind::Withdraw, ActorKind::Person);
        let records = vec![a, keep, drop, op(4, Kind::Check, ActorKind::Tool)];
        let mut bytes = Vec::new();
        let saved = Ledger::new(records.clone()).folded_saving(|write| {
            write(&mut bytes).unwrap();
        });
        let folded = fold(records);
        assert_eq!(answers(&saved), answers(&folded));
        assert_eq!(saved.ignored, folded.ignored);
        assert_eq!(bytes, folded.to_checkpoint());
        let back = Ledger::from_checkpoint(&bytes, Axes::default(), Settling::default()).unwrap();
        assert_eq!(answers(&back), answers(&folded));
        assert_eq!(back.ignored, folded.ignored);
        // A writer that gives up does not hold the fold back.
        let alone = Ledger::new(vec![op(5, Kind::Check, ActorKind::Tool)]).folded_saving(|_| {});
        assert_eq!(alone.applied(), 1);
    }

    #[test]
    fn a_checkpoint_round_trips_and_goes_on_applying() {
        let a = note(1);
        let keep = on(&a, 2, Kind::Keep, ActorKind::Person);
        let check = op(3, Kind::Check, ActorKind::Tool);
        let ledger = fold(vec![a.clone(), keep.clone(), check]);
        let mut back = Ledger::from_checkpoint(
            &ledger.to_checkpoint(),
            Axes::default(),
            Settling::default(),
        )
        .unwrap();
        assert_eq!(answers(&back), answers(&ledger));
        assert_eq!(back.records(), ledger.records());
        let drop = on(&a, 4, Kind::Drop, ActorKind::Person);
        back.apply(drop.clone()).unwrap();
        back.finish();
        let fresh = fold(vec![
            a.clone(),
            keep,
            op(3, Kind::Check, ActorKind::Tool),
            drop,
        ]);
        assert_eq!(answers(&back), answers(&fresh));
        // The view holds the note alone, answers the same, and takes nothing more.
        let mut view = fresh.view();
        assert_eq!(view.records().len(), 1);
        assert_eq!(answers(&view), answers(&fresh));
        assert!(view.apply(op(9, Kind::Check, ActorKind::Tool)).is_err());
        let view_back =
            Ledger::from_checkpoint(&view.to_checkpoint(), Axes::default(), Settling::default())
                .unwrap();
        assert!(view_back.is_view());
        assert_eq!(answers(&view_back), answers(&fresh));
        // An operation named before the log held it is handed back when it
        // arrives (a fold from the start finds it), across the checkpoint too.
        let early = Record {
            target: Some(op(12, Kind::Observe, ActorKind::Agent).id),
            ..op(10, Kind::Withdraw, ActorKind::Agent)
        };
        let mut ahead = fold(vec![a.clone(), early]);
        ahead =
            Ledger::from_checkpoint(&ahead.to_checkpoint(), Axes::default(), Settling::default())
                .unwrap();
        assert!(ahead.apply(op(11, Kind::Check, ActorKind::Tool)).is_ok());
        assert!(
            ahead
                .apply(op(12, Kind::Observe, ActorKind::Agent))
                .is_err()
        );
        // Check runs join a view when the fold would change nothing for
        // them: not when one repeats a content address.
        let run = |n: u64, address: &str| Record {
            address: Some(address.into()),
            ..op(n, Kind::Check, ActorKind::Tool)
        };
        let mut view = fold(vec![a.clone(), run(20, "run-1")]).view();
        assert!(!view.take_added(&[run(21, "run-1")]));
        assert!(!view.take_added(&[run(21, "run-2"), run(22, "run-2")]));
        assert!(view.take_added(&[run(21, "run-2")]));
        assert!(!view.take_added(&[run(22, "run-2")]));
        assert!(!view.take_added(&[op(23, Kind::Signal, ActorKind::Tool)]));
        // A checkpoint folded with another way of settling is not read.
        assert!(
            Ledger::from_checkpoint(&ledger.to_checkpoint(), Axes::default(), Settling::KeepOnly)
                .is_none()
        );
        // Damaged bytes are no ledger.
        let bytes = ledger.to_checkpoint();
        assert!(
            Ledger::from_checkpoint(
                &bytes[..bytes.len() - 1],
                Axes::default(),
                Settling::default()
            )
            .is_none()
        );
    }

    /// An agent's term rule, seen in a file.
    fn rule(n: u64, preferred: &str, avoid: &str) -> Record {
        Record {
            subject: Some(Box::new(Subject::Term {
                preferred: preferred.into(),
                avoid: vec![avoid.into()],
            })),
            evidence: vec![crate::ops::record::Evidence {
                path: Some("docs/a.md".into()),
                ..Default::default()
            }]
            .into(),
            ..op(n, Kind::Observe, ActorKind::Agent)
        }
    }

    #[test]
    fn a_view_takes_a_suggestion_that_stands_alone_as_the_fold_would() {
        let quickcast = rule(1, "Quickcast", "Quick cast");
        let kept = on(&quickcast, 2, Kind::Keep, ActorKind::Person);
        let signal = on(&quickcast, 3, Kind::Signal, ActorKind::Tool);
        let correction = Record {
            correction: Some(Box::new(crate::ops::record::Correction {
                from: "the Flow kit tool".into(),
                to: "the Flowkit tool".into(),
            })),
            ..op(4, Kind::Correct, ActorKind::Person)
        };
        let log = vec![quickcast, kept, signal, correction];
        let taken = |added: &[Record]| {
            let mut view = fold(log.clone()).view();
            view.take_added(added).then_some(view)
        };
        // A note and a rule no subject shares a form with: the view with
        // them answers as the fold of the whole log does.
        let alone = [note(10), rule(11, "Nordkit", "Nord kit")];
        let view = taken(&alone).expect("they stand alone");
        let mut whole = log.clone();
        whole.extend(alone.iter().cloned());
        let fresh = fold(whole);
        assert_eq!(answers(&view), answers(&fresh.view()));
        assert_eq!(view.log_len(), fresh.records().len());
        // Taken again from its own checkpoint, it goes on taking.
        let mut back =
            Ledger::from_checkpoint(&view.to_checkpoint(), Axes::default(), Settling::default())
                .unwrap();
        assert!(back.take_added(&[note(12)]));
        // Not a rule that shares a form with one in the view (by case),
        // one a correction writes toward, or two that share one.
        assert!(taken(&[rule(10, "QuickCast", "Quick-cast")]).is_none());
        assert!(taken(&[rule(10, "Quickcaster", "quick cast")]).is_none());
        assert!(taken(&[rule(10, "Flowkit", "Flow kit")]).is_none());
        assert!(
            taken(&[
                rule(10, "Nordkit", "Nord kit"),
                rule(11, "Nordkit", "Nord-kit")
            ])
            .is_none()
        );
        // Nor one that sorts before an operation the whole ledger holds
        // (a reset after it would set it aside), nor a decision.
        assert!(taken(&[rule(3, "Nordkit", "Nord kit")]).is_none());
        let nordkit = rule(10, "Nordkit", "Nord kit");
        assert!(
            taken(&[
                nordkit.clone(),
                on(&nordkit, 11, Kind::Withdraw, ActorKind::Agent)
            ])
            .is_none()
        );
        assert!(taken(&[on(&log[0], 10, Kind::Drop, ActorKind::Person)]).is_none());
        // Nor one an operation named before the log held it.
        let early = Record {
            target: Some(note(12).id),
            ..op(5, Kind::Withdraw, ActorKind::Agent)
        };
        let mut view = fold(vec![log[0].clone(), early]).view();
        assert!(!view.take_added(&[note(12)]));
        assert!(view.take_added(&[note(13)]));
    }
}
