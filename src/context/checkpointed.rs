//! Every reader's fold, through the checkpoint: when the logs' tips are
//! those the checkpoint was folded from and the journal is empty, the
//! folded ledger (or only its reader's view) is read from it; when the logs
//! only gained operations that sort after everything it holds, those are
//! applied to it; otherwise (a merge brought in an older operation, a ref
//! was rewritten, the code that folds changed, the file is damaged or
//! missing) the log is read and folded from the start, and the checkpoint
//! written again. Whatever path it takes, the answer is the fold of the log
//! (the property test in `tests::checkpoint` holds it to that).

use crate::ops::fold::checkpoint::fingerprint;
use crate::ops::fold::{Ignored, Ledger, fold};
use crate::ops::record::Record;
use crate::store::checkpoint::{self, Checkpoint, Header, Tips};
use crate::store::newest::is_ahead;

use super::{ContextError, Session};

/// What a reader wants of the fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// The whole ledger: every record.
    Full,
    /// Only what states a subject or imports a file ([`Ledger::view`]).
    View,
}

/// Read the folded log for `now` (Unix ms): operations dated more than ten
/// minutes past it are held back and named in `ignored`. Returns the
/// ledger and how many stored lines could not be read.
pub fn read(session: &Session, now: u64, want: Want) -> Result<(Ledger, usize), ContextError> {
    let store = &session.store;
    store.flush_journal_if_free();
    // The tips are read before anything else: the ledger folded below
    // holds at least what they hold, so a checkpoint keyed by them never
    // lacks an operation (it may hold one more, which the next read sees
    // as an operation it cannot apply, and folds again).
    let tips = store.tips()?;
    let pending = store.journal_records()?;
    let dir = store.kapi_dir();
    if let Some(found) = from_checkpoint(session, &tips, &pending, now, want)? {
        return Ok(found);
    }
    let loaded = store.load_all()?;
    let unreadable = loaded.problems.len();
    let (ledger, held) = fold_held_back(loaded.records, now);
    if pending.is_empty() {
        save(&dir, tips, unreadable, &held, &ledger);
    }
    Ok((answer(session, ledger, &held, want), unreadable))
}

/// The answer from the checkpoint, when it can give one.
fn from_checkpoint(
    session: &Session,
    tips: &Tips,
    pending: &[Record],
    now: u64,
    want: Want,
) -> Result<Option<(Ledger, usize)>, ContextError> {
    let store = &session.store;
    let dir = store.kapi_dir();
    let Some(mut found) = Checkpoint::open(&dir, fingerprint()) else {
        return Ok(None);
    };
    let Some(since) = found.header.tips() else {
        return Ok(None);
    };
    // An operation held back whose time has come sorts before what was
    // applied after it was held: fold again.
    if found.header.held.iter().any(|r| !is_ahead(&r.id, now)) {
        return Ok(None);
    }
    let unreadable = found.header.unreadable;
    if &since == tips && pending.is_empty() {
        let held = found.header.held.clone();
        let bytes = match want {
            Want::View => found.view(),
            Want::Full => found.full(),
        };
        return Ok(bytes
            .and_then(|b| Ledger::from_checkpoint(&b))
            .map(|mut ledger| {
                hold(&mut ledger, &held);
                (ledger, unreadable)
            }));
    }
    let Some(mut added) = store.added_since(since)? else {
        return Ok(None);
    };
    added.extend(pending.iter().cloned());
    let mut held = found.header.held.clone();
    let Some(mut ledger) = found.full().and_then(|b| Ledger::from_checkpoint(&b)) else {
        return Ok(None);
    };
    if ledger.is_view() {
        return Ok(None);
    }
    added.sort_by(|a, b| a.id.cmp(&b.id));
    added.dedup();
    let newest = ledger.newest_key();
    for record in added {
        if is_ahead(&record.id, now) {
            if !held.contains(&record) {
                held.push(record);
            }
            continue;
        }
        // Already folded (a journaled line the checkpoint held, now on the ref).
        if ledger.get(&record.id) == Some(&record) {
            continue;
        }
        if newest.is_some_and(|n| crate::ops::id::key(&record.id) <= n)
            || held
                .iter()
                .any(|h| crate::ops::id::key(&h.id) < crate::ops::id::key(&record.id))
        {
            return Ok(None);
        }
        if ledger.apply(record).is_err() {
            return Ok(None);
        }
    }
    ledger.finish();
    held.sort_by(|a, b| a.id.cmp(&b.id));
    if pending.is_empty() {
        save(&dir, *tips, unreadable, &held, &ledger);
    }
    Ok(Some((answer(session, ledger, &held, want), unreadable)))
}

/// Fold `records`, holding back those dated ahead of `now`.
fn fold_held_back(mut records: Vec<Record>, now: u64) -> (Ledger, Vec<Record>) {
    let mut held = Vec::new();
    records.retain(|r| {
        let ahead = crate::ops::id::is_id(&r.id) && is_ahead(&r.id, now);
        if ahead {
            held.push(r.clone());
        }
        !ahead
    });
    (fold(records), held)
}

/// What a reader gets: the ledger (or its view) with the held-back
/// operations named.
fn answer(session: &Session, ledger: Ledger, held: &[Record], want: Want) -> Ledger {
    let mut answer = match want {
        Want::View => {
            let view = ledger.view();
            session.release(ledger);
            view
        }
        Want::Full => ledger,
    };
    hold(&mut answer, held);
    answer
}

fn hold(ledger: &mut Ledger, held: &[Record]) {
    ledger.ignored.extend(held.iter().map(|r| Ignored {
        id: r.id.clone(),
        reason: "dated more than 10 minutes past this machine's clock: held back until its time comes"
            .into(),
    }));
}

/// Write the checkpoint (best effort: a read never fails because it could
/// not be kept).
fn save(dir: &std::path::Path, tips: Tips, unreadable: usize, held: &[Record], ledger: &Ledger) {
    let view = ledger.view().to_checkpoint();
    let full = ledger.to_checkpoint();
    let _ = checkpoint::write(
        dir,
        fingerprint(),
        Header::new(tips, unreadable, held.to_vec()),
        &view,
        &full,
    );
}
