//! Every reader's fold, through the checkpoint: when the logs' tips are
//! those the checkpoint was folded from and the journal is empty, the
//! reader's view (or the whole ledger) is read from it; when the logs only
//! gained operations that sort after everything the base holds, those are
//! applied to it; otherwise (a merge brought in an older operation, a ref
//! was rewritten, the code that folds changed, the file is damaged or
//! missing) the log is read and folded from the start, and the checkpoint
//! written again. Whatever path it takes, the answer is the fold of the log
//! (the property test in `tests::checkpoint` holds it to that).

use std::cell::OnceCell;
use std::rc::Rc;

use crate::ops::fold::checkpoint;
use crate::ops::fold::{Ignored, Ledger};
use crate::ops::group::Groups;
use crate::ops::history::Histories;
use crate::ops::id::OpId;
use crate::ops::record::Record;
use crate::store::checkpoint::{Checkpoint, Header, Part, Tips};
use crate::store::newest::is_ahead;

use super::here::RuleItems;
use super::{ContextError, Session};

/// What a reader wants of the fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// The whole ledger: every record.
    Full,
    /// Only what states a subject or imports a file ([`Ledger::view`]).
    View,
    /// The view and every decision: all but the usage signals and check
    /// runs ([`Ledger::decisions`]).
    Decisions,
}

impl Want {
    /// The checkpoint file that keeps what this reader wants alone, if
    /// one does (the whole ledger is the base, at tips that may be older).
    fn part(self) -> Option<Part> {
        match self {
            Want::Full => None,
            Want::View => Some(Part::View),
            Want::Decisions => Some(Part::Decisions),
        }
    }
}

/// The base (the whole folded ledger) is written again once this many
/// operations have been applied to it on reads; until then each read
/// applies them again (reading only the segments they changed) and writes
/// only the small view.
const REBASE: usize = if cfg!(test) { 2 } else { 500 };

/// Read the folded log for `now` (Unix ms): operations dated more than ten
/// minutes past it are held back and named in `ignored`. Returns the
/// ledger and how many stored lines could not be read.
pub fn read(session: &Session, now: u64, want: Want) -> Result<(Ledger, usize), ContextError> {
    read_through(session, now, want, true)
}

/// [`read`] for a reader that knows the logs just gained an operation
/// older than one they held (a sync that merged diverged logs): no
/// checkpoint can be advanced by it, so the log is folded from the start
/// (and the checkpoint written again) without first decoding the base and
/// reading the changed segments to find that out. The answer is the same.
pub fn read_refolding(
    session: &Session,
    now: u64,
    want: Want,
) -> Result<(Ledger, usize), ContextError> {
    read_through(session, now, want, false)
}

fn read_through(
    session: &Session,
    now: u64,
    want: Want,
    checkpoint: bool,
) -> Result<(Ledger, usize), ContextError> {
    read_with(
        session,
        now,
        want,
        checkpoint,
        |kept| match want {
            Want::Full => {
                let mut full = kept.full().clone();
                name_held(&mut full, &kept.held);
                full
            }
            Want::View => match Rc::try_unwrap(kept.view()) {
                Ok(view) => view.ledger,
                Err(shared) => shared.ledger.clone(),
            },
            Want::Decisions => {
                let mut decisions = kept.full().decisions();
                name_held(&mut decisions, &kept.held);
                decisions
            }
        },
        |ledger| ledger,
    )
}

/// Every read's one path: from the fold a long-running process keeps
/// (`kept`), or afresh (`afresh`, given the ledger `want` asks for, with
/// what it holds back named); with how many stored lines could not be read.
fn read_with<T>(
    session: &Session,
    now: u64,
    want: Want,
    checkpoint: bool,
    kept: impl FnOnce(&mut Kept) -> T,
    afresh: impl FnOnce(Ledger) -> T,
) -> Result<(T, usize), ContextError> {
    let store = &session.store;
    store.flush_journal_if_free();
    // The tips are read before anything else: the ledger folded below
    // holds at least what they hold, so a checkpoint keyed by them never
    // lacks an operation (it may hold one more, which the next read sees
    // as an operation it cannot apply, and folds again).
    let tips = store.tips()?;
    let pending = store.journal_records()?;
    // A long-running process keeps the fold between calls; a journaled
    // line not yet on the tips is read the long way. The view is kept; the
    // whole ledger once it was read and is small enough to keep. Without
    // one, the whole ledger and the view with every decision are read as a
    // one-call process reads them (a listing, a search, a summary).
    let long_running = pending.is_empty() && !session.env().ends_with_call();
    if long_running {
        let mut memo = session.memo.borrow_mut();
        if want == Want::View || memo.holds_full() {
            let found = memo.bring(session, tips, now, want)?;
            let unreadable = found.unreadable;
            let answer = kept(found);
            memo.let_go_if_long();
            return Ok((answer, unreadable));
        }
    }
    let (mut ledger, unreadable, held) =
        read_afresh(session, tips, &pending, now, want, checkpoint)?;
    if long_running && want == Want::Full && ledger.records().len() <= KEEP_WHOLE {
        session
            .memo
            .borrow_mut()
            .keep_whole(tips, &held, unreadable, ledger.clone());
    }
    // Only a read of the whole ledger says where the whole ledger stood:
    // the view read between it and a write leaves the record as it was.
    if want == Want::Full {
        let whole = pending.is_empty() && held.is_empty();
        session.full_read.set(whole.then(|| FullRead {
            tips,
            unreadable,
            newest: ledger.newest_key(),
            len: ledger.records().len(),
        }));
    }
    name_held(&mut ledger, &held);
    Ok((afresh(ledger), unreadable))
}

/// Where a one-call process's last read of the whole ledger stood: the
/// logs' tips it was folded at (with nothing held back and no journaled
/// line beside them), and the ledger's newest record and length then, by
/// which [`after_write`] knows that ledger again.
#[derive(Debug, Clone, Copy)]
pub struct FullRead {
    tips: Tips,
    unreadable: usize,
    newest: Option<u128>,
    len: usize,
}

/// After a process that read the whole ledger to decide what to record
/// (a person's decision, a withdrawal, settling) recorded it: that ledger,
/// advanced by what the logs gained since it was read (the operations
/// just recorded, and any another writer recorded meanwhile), gives the
/// reader's view and the view with every decision at the logs' tips now,
/// saved for the next reader (the rules files refreshed next, the
/// commit's hook, a check), who would otherwise decode the whole ledger
/// again: a second at a million operations, after every decision.
///
/// Best effort, and only in a process that ends with this call (a
/// long-running one keeps its fold), for the ledger the last whole read
/// gave, unchanged (its newest record and length as read): nothing is
/// saved when it cannot be advanced as a reader advances the base
/// (an older operation arrived, one is dated ahead, a line is journaled).
pub fn after_write(session: &Session, mut ledger: Ledger) {
    if let Some(read) = session.full_read.take()
        && session.env().ends_with_call()
        && ledger.newest_key() == read.newest
        && ledger.records().len() == read.len
        && !ledger.is_view()
    {
        let _ = save_advanced(session, &mut ledger, read);
    }
    session.release(ledger);
}

fn save_advanced(
    session: &Session,
    ledger: &mut Ledger,
    read: FullRead,
) -> Result<(), ContextError> {
    let store = &session.store;
    // The tips first: the ledger advanced below holds at least what they
    // hold (as in `read_with`).
    let tips = store.tips()?;
    if tips == read.tips || !store.journal_records()?.is_empty() {
        return Ok(());
    }
    let Some(added) = store.added_since(read.tips)? else {
        return Ok(());
    };
    let now = session.now_ms()?.max(session.env().wall_ms());
    let mut held = Vec::new();
    if advance(ledger, &mut held, added, now).is_none() || !held.is_empty() {
        return Ok(());
    }
    ledger.finish();
    let dir = store.kapi_dir();
    let print = fingerprint(session);
    for (part, shaped) in [
        (Part::View, ledger.view()),
        (Part::Decisions, ledger.decisions()),
    ] {
        save(&dir, print, part, tips, read.unreadable, &[], &shaped);
    }
    Ok(())
}

/// A reader's view, shared, with what is derived from it alone made once
/// and kept beside it: it is never changed, so nothing kept goes stale.
#[derive(Debug)]
pub struct SharedView {
    ledger: Ledger,
    groups: OnceCell<Groups>,
    rule_items: OnceCell<RuleItems>,
}

impl SharedView {
    pub fn new(ledger: Ledger) -> Self {
        Self {
            ledger,
            groups: OnceCell::new(),
            rule_items: OnceCell::new(),
        }
    }

    /// Its rule groups ([`Ledger::rule_groups`]), made on first use.
    pub fn groups(&self) -> &Groups {
        self.groups.get_or_init(|| self.ledger.rule_groups())
    }

    /// Its term rules with their items ([`RuleItems::of`]), made on
    /// first use.
    pub fn rule_items(&self) -> &RuleItems {
        self.rule_items.get_or_init(|| RuleItems::of(&self.ledger))
    }
}

impl std::ops::Deref for SharedView {
    type Target = Ledger;
    fn deref(&self) -> &Ledger {
        &self.ledger
    }
}

/// The reader's view ([`Want::View`]) as [`read`] gives it, shared: a
/// long-running process hands out the view it keeps without a copy.
pub fn read_view(session: &Session, now: u64) -> Result<(Rc<SharedView>, usize), ContextError> {
    read_with(session, now, Want::View, true, Kept::view, |ledger| {
        Rc::new(SharedView::new(ledger))
    })
}

/// The fold a long-running process (the MCP server) keeps between calls,
/// at the logs' tips it was read at, with what it holds back: the reader's
/// view, read through the checkpoint as a one-call process reads it; and
/// the whole ledger once a reader asked for it (a listing of every kind,
/// a session's summary) while the log has at most [`KEEP_WHOLE`]
/// operations, the view then made from it. A reader of the whole ledger
/// or of the view with every decision (a listing of one kind, a search)
/// is answered from a whole ledger it keeps, else through the checkpoint,
/// keeping nothing more (a short log's whole ledger is kept then).
///
/// When the tips move, a view alone is read again through the checkpoint,
/// which takes what the logs gained when it can ([`from_checkpoint`]); a
/// whole ledger has the operations they gained applied to it as to the
/// base checkpoint ([`advance`]). When that cannot be (a merge brought in
/// an older operation, a ref was rewritten, one held back came due) it is
/// read afresh. A reader of the whole ledger gets a copy (it may change
/// it); readers of the view share it ([`read_view`]). The project
/// ([`super::Project`]) keeps it; a server opens the project again,
/// and so folds again, when `kapi.toml` or a gazetteer changed.
///
/// Keeping no whole ledger of a long log is what lets many servers run
/// beside it: at 1,000,000 operations the whole ledger is ~500 MB in
/// each, the view a few MB.
#[derive(Default)]
pub struct Memo {
    kept: Option<Kept>,
}

struct Kept {
    tips: Tips,
    held: Vec<Record>,
    unreadable: usize,
    /// The whole ledger, finished, without the held-back operations
    /// named, once a reader asked for it.
    full: Option<Ledger>,
    /// The reader's view, with them named, once one was asked for. One of
    /// the two is always kept.
    view: Option<Rc<SharedView>>,
}

impl Kept {
    /// The whole ledger ([`Memo::bring`] keeps it for a reader who wants
    /// more than the view).
    fn full(&self) -> &Ledger {
        self.full
            .as_ref()
            .expect("the memo keeps the whole ledger for a reader of it")
    }

    fn view(&mut self) -> Rc<SharedView> {
        let (full, held) = (&self.full, &self.held);
        Rc::clone(self.view.get_or_insert_with(|| {
            let mut view = full
                .as_ref()
                .expect("the memo keeps a view or the whole ledger")
                .view();
            name_held(&mut view, held);
            Rc::new(SharedView::new(view))
        }))
    }
}

/// The most operations a long-running process keeps a whole ledger of
/// between calls (some tens of MB); a longer log's whole ledger is read
/// for each call that needs it and let go, while its view stays kept
/// (at 1,000,000 operations the whole ledger is ~500 MB in each server).
const KEEP_WHOLE: usize = if cfg!(test) { 8 } else { 100_000 };

impl Memo {
    /// Keep `full`, the whole ledger just read at `tips` (without the
    /// held-back operations named), in place of what was kept.
    fn keep_whole(&mut self, tips: Tips, held: &[Record], unreadable: usize, full: Ledger) {
        self.kept = Some(Kept {
            tips,
            held: held.to_vec(),
            unreadable,
            full: Some(full),
            view: None,
        });
    }

    /// Keep `view`, the reader's view just read at `tips` (without the
    /// held-back operations named: they are named here), alone.
    fn keep_view(&mut self, tips: Tips, held: Vec<Record>, unreadable: usize, mut view: Ledger) {
        name_held(&mut view, &held);
        self.kept = Some(Kept {
            tips,
            held,
            unreadable,
            full: None,
            view: Some(Rc::new(SharedView::new(view))),
        });
    }

    /// Let go of a whole ledger the logs' growth took past [`KEEP_WHOLE`]
    /// (its view, when one was made, stays kept).
    fn let_go_if_long(&mut self) {
        if let Some(kept) = &mut self.kept
            && kept
                .full
                .as_ref()
                .is_some_and(|f| f.records().len() > KEEP_WHOLE)
        {
            kept.full = None;
            if kept.view.is_none() {
                self.kept = None;
            }
        }
    }

    /// Whether it keeps a whole ledger (at whatever tips).
    fn holds_full(&self) -> bool {
        self.kept.as_ref().is_some_and(|k| k.full.is_some())
    }

    /// The fold at `tips`, holding what `want` asks for: the one kept,
    /// advanced by what the logs gained since, or read afresh.
    fn bring(
        &mut self,
        session: &Session,
        tips: Tips,
        now: u64,
        want: Want,
    ) -> Result<&mut Kept, ContextError> {
        let view_alone = want == Want::View;
        let current = match self.kept.as_mut() {
            Some(kept) if due(&kept.held, now) => false,
            Some(kept) if kept.tips == tips => view_alone || kept.full.is_some(),
            Some(Kept {
                full: Some(full),
                held,
                tips: kept_tips,
                view,
                ..
            }) => {
                let added = session.store.added_since(*kept_tips)?;
                let advanced = added
                    .and_then(|added| advance(full, held, added, now))
                    .is_some();
                if advanced {
                    full.finish();
                    *kept_tips = tips;
                    *view = None;
                }
                advanced
            }
            // A view alone is read again (through the checkpoint, which
            // takes what the logs gained when it can).
            Some(_) | None => false,
        };
        if !current {
            // The old fold is let go before the new one is read.
            self.kept = None;
            let (ledger, unreadable, held) =
                read_afresh(session, tips, &[], now, want_kept(want), true)?;
            match view_alone {
                true => self.keep_view(tips, held, unreadable, ledger),
                false => self.keep_whole(tips, &held, unreadable, ledger),
            }
        }
        Ok(self
            .kept
            .get_or_insert_with(|| unreachable!("kept just above")))
    }
}

/// What the memo reads afresh for a reader who wants `want`: the view
/// alone, or the whole ledger (whose decisions' view is made from it when
/// it keeps one).
fn want_kept(want: Want) -> Want {
    match want {
        Want::View => Want::View,
        Want::Full | Want::Decisions => Want::Full,
    }
}

/// [`read`] without the memo: the fold through the checkpoint (unless
/// `checkpoint` is off), or from the start, shaped as `want` says; with
/// the operations held back as dated ahead (not named in it yet).
fn read_afresh(
    session: &Session,
    tips: Tips,
    pending: &[Record],
    now: u64,
    want: Want,
    checkpoint: bool,
) -> Result<(Ledger, usize, Vec<Record>), ContextError> {
    let store = &session.store;
    if checkpoint && let Some(found) = from_checkpoint(session, &tips, pending, now, want)? {
        return Ok(found);
    }
    let loaded = store.load_all()?;
    let unreadable = crate::store::segment::unreadable(&loaded.problems);
    let (records, held) = hold_back(loaded.records, now);
    let ledger = session.unfolded(records);
    if !pending.is_empty() {
        let ledger = ledger.folded();
        return Ok((shape(session, ledger, want), unreadable, held));
    }
    let dir = store.kapi_dir();
    let print = fingerprint(session);
    // The base is written while the fold runs.
    let header = Header::new(tips, unreadable, held.clone());
    let ledger = ledger.folded_saving(|ledger| {
        let _ = crate::store::checkpoint::write(&dir, Part::Base, print, header, |out| ledger(out));
    });
    // The signatures this fold verified, for the next cold read.
    if let Some(trust) = session.trust() {
        trust.remember();
    }
    let view = ledger.view();
    save(&dir, print, Part::View, tips, unreadable, &held, &view);
    // A reader of the view takes the one just saved.
    let shaped = if want == Want::View {
        session.release(ledger);
        view
    } else {
        session.release(view);
        shape(session, ledger, want)
    };
    if want == Want::Decisions {
        save(
            &dir,
            print,
            Part::Decisions,
            tips,
            unreadable,
            &held,
            &shaped,
        );
    }
    Ok((shaped, unreadable, held))
}

/// Every subject's history of status changes (`context log --history`)
/// with the fold of the log shaped as `want` says, and how many stored
/// lines could not be read. The histories are kept beside the checkpoint
/// (`fold.history`, keyed like it by the logs' tips and the code, with
/// the sources of the histories' pass): when they are the log's as it
/// stands, they are taken with the fold read through the checkpoint, and
/// only if they agree with it ([`Histories::from_kept`]); otherwise the
/// log is folded again with them, as without a checkpoint, and they are
/// kept for the next read.
pub fn read_histories(
    session: &Session,
    now: u64,
    want: Want,
) -> Result<(Histories, usize), ContextError> {
    let store = &session.store;
    store.flush_journal_if_free();
    let tips = store.tips()?;
    let quiet = store.journal_records()?.is_empty();
    let dir = store.kapi_dir();
    let print = history_print(session);
    if quiet
        && let Some(found) = Checkpoint::open(&dir, Part::History, &print)
        && found.header.tips() == Some(tips)
        && !due(&found.header.held, now)
    {
        let kept_unreadable = found.header.unreadable;
        if let Some(bytes) = found.bytes() {
            let (ledger, unreadable) = read(session, now, want)?;
            if unreadable == kept_unreadable {
                match Histories::from_kept(&bytes, ledger) {
                    Ok(histories) => return Ok((histories, unreadable)),
                    Err(ledger) => session.release(ledger),
                }
            } else {
                session.release(ledger);
            }
        }
    }
    let loaded = store.load_all()?;
    let unreadable = crate::store::segment::unreadable(&loaded.problems);
    let (records, held) = hold_back(loaded.records, now);
    let mut histories = crate::ops::history::histories(session.unfolded(records));
    name_held(&mut histories.ledger, &held);
    if quiet {
        let _ = crate::store::checkpoint::write(
            &dir,
            Part::History,
            &print,
            Header::new(tips, unreadable, held),
            |out| histories.write_kept(out),
        );
    }
    Ok((histories, unreadable))
}

/// What the kept histories are keyed by: what folds the log
/// ([`fingerprint`]) and the pass that makes the histories.
pub(super) fn history_print(session: &Session) -> String {
    format!(
        "{} history {}",
        fingerprint(session),
        env!("KAPI_CODE_HISTORY")
    )
}

/// The sources of how a reader reads the log and what it holds back,
/// beside the fold's own ([`checkpoint::fingerprint`]): a change to any of
/// them makes every existing checkpoint stale. build.rs computes their
/// checksum (`KAPI_CODE_READER`); a test checks its list against this one.
#[cfg(test)]
pub(crate) const READER_SOURCES: &[&str] = &[
    include_str!("../store/read.rs"),
    include_str!("../store/segment.rs"),
    // Which records a large import's content lets through, read back.
    include_str!("../store/content.rs"),
    // What is held back as dated ahead, and how a reader folds.
    include_str!("../store/newest.rs"),
    include_str!("checkpointed.rs"),
];

/// What folds this project's log: the code (the fold's,
/// [`checkpoint::fingerprint`], and the reader's, [`READER_SOURCES`]),
/// the typed axes the fold compares scopes on (`[axes]` in kapi.toml and
/// the gazetteers it names) and how it settles suggestions (`[context]
/// settle`), so a checkpoint folded before any of them changed is not
/// read. Made once per opened project: a gazetteer can be long.
fn fingerprint(session: &Session) -> &str {
    session.fold_fingerprint.get_or_init(|| {
        let mut crc = crc32fast::Hasher::new();
        crc.update(format!("{:?}", session.axes()).as_bytes());
        // Signed decisions: the mode and the allowed-signers file's bytes
        // (a changed file refolds).
        let trust = session
            .trust()
            .map(|t| format!(" trust {:?} {}", t.mode, t.digest))
            .unwrap_or_default();
        format!(
            "{} reader {} axes {:08x} settle {}{trust}",
            checkpoint::fingerprint(),
            env!("KAPI_CODE_READER"),
            crc.finalize(),
            session.settling().as_str()
        )
    })
}

/// Whether the reader's view at `at` takes what the logs gained since
/// ([`Ledger::take_added`]): check runs (each hook run records one on
/// `refs/kapi/local`) and suggestions that stand alone (an agent's note),
/// none dated ahead. Then it is the view now, and a check after a hook or
/// a note does not read the whole ledger.
fn taken_since(
    store: &crate::store::Store,
    view: &mut Ledger,
    at: Tips,
    now: u64,
) -> Result<bool, ContextError> {
    Ok(store.added_since(at)?.is_some_and(|added| {
        added.iter().all(|r| !is_ahead(&r.id, now)) && view.take_added(&added)
    }))
}

/// Whether an operation held back has come due: it sorts before what was
/// applied after it was held, so the log is folded again.
fn due(held: &[Record], now: u64) -> bool {
    held.iter().any(|r| !is_ahead(&r.id, now))
}

/// The answer from the checkpoint, when it can give one.
fn from_checkpoint(
    session: &Session,
    tips: &Tips,
    pending: &[Record],
    now: u64,
    want: Want,
) -> Result<Option<(Ledger, usize, Vec<Record>)>, ContextError> {
    let store = &session.store;
    let dir = store.kapi_dir();
    let print = fingerprint(session);
    if let Some(part) = want.part()
        && pending.is_empty()
        && let Some(found) = Checkpoint::open(&dir, part, print)
        && let Some(at) = found.header.tips()
        && !due(&found.header.held, now)
    {
        let (held, unreadable) = (found.header.held.clone(), found.header.unreadable);
        if let Some(mut view) = found
            .bytes()
            .and_then(|b| Ledger::from_checkpoint(&b, session.axes(), session.settling()))
            .map(|l| l.trusting(session.trust()))
            .filter(Ledger::is_view)
            && (&at == tips || taken_since(store, &mut view, at, now)?)
        {
            if &at != tips {
                save(&dir, print, part, *tips, unreadable, &held, &view);
            }
            return Ok(Some((view, unreadable, held)));
        }
    }
    let Some(base) = Checkpoint::open(&dir, Part::Base, print) else {
        return Ok(None);
    };
    let Some(since) = base.header.tips() else {
        return Ok(None);
    };
    if due(&base.header.held, now) {
        return Ok(None);
    }
    let mut added = Vec::new();
    if &since != tips {
        match store.added_since(since)? {
            Some(found) => added = found,
            None => return Ok(None),
        }
    }
    added.extend(pending.iter().cloned());
    let (mut held, unreadable) = (base.header.held.clone(), base.header.unreadable);
    let Some(mut ledger) = base
        .bytes()
        .and_then(|b| Ledger::from_checkpoint(&b, session.axes(), session.settling()))
        .map(|l| l.trusting(session.trust()))
        .filter(|l| !l.is_view())
    else {
        return Ok(None);
    };
    let Some(applied) = advance(&mut ledger, &mut held, added, now) else {
        return Ok(None);
    };
    ledger.finish();
    if pending.is_empty() {
        if applied > REBASE {
            save(&dir, print, Part::Base, *tips, unreadable, &held, &ledger);
        }
        if &since != tips || want == Want::View {
            save(
                &dir,
                print,
                Part::View,
                *tips,
                unreadable,
                &held,
                &ledger.view(),
            );
        }
    }
    let shaped = shape(session, ledger, want);
    if pending.is_empty() && want == Want::Decisions {
        save(
            &dir,
            print,
            Part::Decisions,
            *tips,
            unreadable,
            &held,
            &shaped,
        );
    }
    Ok(Some((shaped, unreadable, held)))
}

/// Apply to `ledger` (a whole ledger, folded from the logs at some tips)
/// the operations the logs gained since: those dated ahead of `now` join
/// `held`. Returns how many were applied, or `None` when the fold must be
/// read afresh: an operation sorts before one the ledger holds or one
/// held back (a merge brought in an older operation), or it cannot be
/// applied. `ledger` is then partly changed: the caller drops it.
fn advance(
    ledger: &mut Ledger,
    held: &mut Vec<Record>,
    mut added: Vec<Record>,
    now: u64,
) -> Option<usize> {
    added.sort_by(|a, b| a.id.cmp(&b.id));
    added.dedup();
    let newest = ledger.newest_key();
    let mut applied = 0;
    for record in added {
        if is_ahead(&record.id, now) {
            if !held.contains(&record) {
                held.push(record);
            }
            continue;
        }
        // Already folded (a journaled line the checkpoint held, now on the ref).
        if OpId::parse(&record.id).is_ok_and(|id| ledger.get(&id) == Some(&record)) {
            continue;
        }
        let key = crate::ops::id::key(&record.id);
        if newest.is_some_and(|n| key <= n) || held.iter().any(|h| crate::ops::id::key(&h.id) < key)
        {
            return None;
        }
        ledger.apply(record).ok()?;
        applied += 1;
    }
    held.sort_by(|a, b| a.id.cmp(&b.id));
    Some(applied)
}

/// Set aside the records dated more than ten minutes ahead of `now`:
/// returns the rest and those held back. `records` are in id order (as the
/// store reads them), so those are the last ones: found by bisection, not
/// by a pass over a long log.
pub fn hold_back(mut records: Vec<Record>, now: u64) -> (Vec<Record>, Vec<Record>) {
    debug_assert!(records.is_sorted_by(|a, b| a.id <= b.id));
    let cut = records.partition_point(|r| !is_ahead(&r.id, now));
    let held = records.split_off(cut);
    (records, held)
}

/// What a reader wants of a whole ledger: itself, its view, or its view
/// with every decision.
fn shape(session: &Session, ledger: Ledger, want: Want) -> Ledger {
    let part = match want {
        Want::Full => return ledger,
        Want::View => ledger.view(),
        Want::Decisions => ledger.decisions(),
    };
    session.release(ledger);
    part
}

/// Name each operation held back in `ledger.ignored`.
pub fn name_held(ledger: &mut Ledger, held: &[Record]) {
    ledger.ignored.extend(held.iter().map(|r| Ignored {
        id: r.op_id(),
        reason: "dated more than 10 minutes past this machine's clock: held back until its time comes"
            .into(),
    }));
}

/// Write one file of the checkpoint (best effort: a read never fails
/// because it could not be kept).
fn save(
    dir: &std::path::Path,
    fingerprint: &str,
    part: Part,
    tips: Tips,
    unreadable: usize,
    held: &[Record],
    ledger: &Ledger,
) {
    let _ = crate::store::checkpoint::write(
        dir,
        part,
        fingerprint,
        Header::new(tips, unreadable, held.to_vec()),
        |out| ledger.write_checkpoint(out),
    );
}
