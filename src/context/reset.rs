//! `kapi context reset --before <point>`: go back to how the context stood
//! at an earlier point. The point is an agent session (its first
//! operation), a date or an instant (the first operation at or after it),
//! or one operation by id or unambiguous prefix. The reset operation names
//! the first operation it sets aside (`before`); the fold does the rest
//! (`Ledger::reset`: set-aside computed newest first, so a reset inside a
//! later reset's range has no effect, and a reset of a reset brings back
//! what it set aside). Nothing is erased.
//!
//! The report is computed by applying the reset to the folded log, so a
//! dry run (nothing recorded) and a real one say the same.

use std::path::PathBuf;

use serde::Serialize;

use super::review::describe;
use super::{ContextError, Session};
use crate::ops::id::{OpId, resolve};
use crate::ops::record::{Kind, Record};
use crate::ops::scope::parse_bound;
use crate::ops::{Draft, Drafted};
use crate::ops::{Ledger, Status};

#[derive(Debug, Clone, Default)]
pub struct ResetRequest {
    /// A session, a date, an instant, or an operation id or prefix.
    pub before: String,
    /// Report what the reset would do and record nothing.
    pub dry_run: bool,
    /// Why, in the person's words.
    pub note: Option<String>,
}

/// How the point was read.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Point {
    /// Before the first operation of an agent session.
    Session { session: String },
    /// Before a date or an instant (Unix milliseconds).
    Instant { text: String },
    /// Before one operation.
    Operation { id: OpId },
}

/// A subject the reset sets aside or brings back.
#[derive(Debug, Clone, Serialize)]
pub struct Subjected {
    pub id: OpId,
    pub short: String,
    pub kind: Kind,
    pub subject: String,
    /// Its status before the reset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub was: Option<Status>,
    /// Its status after.
    pub now: Status,
}

/// What a reset did, or would do on a dry run.
#[derive(Debug, Serialize)]
pub struct ResetReport {
    pub point: Point,
    /// The first operation set aside.
    pub before: OpId,
    /// The reset recorded; `None` on a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Record>,
    pub dry_run: bool,
    /// Rules, notes and corrections set aside.
    pub set_aside: Vec<Subjected>,
    /// Decisions (keeps, drops, withdrawals, widenings, signals,
    /// establishments, resets) recorded from the point on, set aside with
    /// them.
    pub decisions: usize,
    /// What an earlier reset set aside and answers again.
    pub answer_again: Vec<Subjected>,
    pub refreshed: Vec<PathBuf>,
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// Reset the context to before a point (or report what that would do).
pub fn reset(session: &Session, req: &ResetRequest) -> Result<ResetReport, ContextError> {
    session.permits(Kind::Reset)?;
    let ledger = session.ledger()?;
    let (point, before) = resolve_point(&ledger, &req.before)?;
    let draft = Draft::from(Drafted::Reset { before }).noting(req.note.clone());
    // The rules files the door refreshed (a reset always changes what is in
    // force), and why that failed.
    let mut refreshed = None;
    let (ledger, record, recorded) = if req.dry_run {
        let mut record = session
            .admit_all(vec![draft], Some(&ledger))?
            .pop()
            .expect("one draft, one record");
        // A stand-in id past every one the log holds, as the real one will be.
        let newest = ledger.records().last().map(Record::op_id);
        let id = OpId::mint(session.now_ms()?, session.env().random(), newest.as_ref())
            .map_err(|e| ContextError::Usage(e.to_string()))?;
        record.id = id.to_string().into();
        record.at = id.instant().into();
        (ledger, record, None)
    } else {
        let recorded = session.record(vec![draft], Some(&ledger))?;
        refreshed = Some((recorded.refreshed, recorded.refresh_error));
        let appended = recorded
            .records
            .into_iter()
            .next()
            .expect("one draft, one record");
        // Fold what the log held before the reset, then apply it: another
        // writer may have appended in between.
        let loaded = session.ledger()?;
        let mut records: Vec<Record> = loaded.records().to_vec();
        session.release(loaded);
        records.retain(|r| r.id != appended.id);
        (
            session.unfolded(records).folded(),
            appended.clone(),
            Some(appended),
        )
    };
    let mut report = report_of(ledger, record, point, before)?;
    report.dry_run = req.dry_run;
    report.recorded = recorded;
    if let Some((refreshed, refresh_error)) = refreshed {
        report.refreshed = refreshed;
        report.refresh_error = refresh_error;
    }
    Ok(report)
}

/// Apply `reset` to the folded log and read off what it set aside, how
/// many decisions went with it, and what answers again.
fn report_of(
    mut ledger: Ledger,
    reset: Record,
    point: Point,
    before: OpId,
) -> Result<ResetReport, ContextError> {
    let statuses: Vec<Option<Status>> = ledger.iter().map(|(_, s)| s.map(|s| s.status)).collect();
    let decisions = ledger
        .records()
        .iter()
        .filter(|r| r.op_id().key() >= before.key())
        .filter(|r| {
            matches!(
                r.kind,
                Kind::Keep
                    | Kind::Drop
                    | Kind::Withdraw
                    | Kind::Widen
                    | Kind::Signal
                    | Kind::Establish
                    | Kind::Reset
            )
        })
        .count();
    ledger.apply(reset).map_err(|r| {
        ContextError::Usage(format!(
            "the reset #{} sorts before an operation the log holds; run it again",
            r.short()
        ))
    })?;
    ledger.finish();
    let mut set_aside = Vec::new();
    let mut answer_again = Vec::new();
    for ((record, state), was) in ledger.iter().zip(statuses) {
        let Some(state) = state else { continue };
        let item = || Subjected {
            id: record.op_id(),
            short: record.short().to_owned(),
            kind: record.kind,
            subject: describe(record),
            was,
            now: state.status,
        };
        match (was, state.status) {
            (Some(Status::Reset), Status::Reset) | (None, _) => {}
            (Some(_), Status::Reset) => set_aside.push(item()),
            (Some(Status::Reset), _) => answer_again.push(item()),
            _ => {}
        }
    }
    Ok(ResetReport {
        point,
        before,
        recorded: None,
        dry_run: false,
        set_aside,
        decisions,
        answer_again,
        refreshed: Vec::new(),
        refresh_error: None,
    })
}

/// The first operation a reset to before `text` sets aside, and how
/// `text` was read: a date or an instant, a session, else an id or prefix.
fn resolve_point(ledger: &Ledger, text: &str) -> Result<(Point, OpId), ContextError> {
    let text = text.trim();
    let shared = |r: &&Record| r.kind != Kind::Check;
    let first_after = |ms: u64| {
        ledger
            .records()
            .iter()
            .filter(shared)
            .find(|r| r.op_id().unix_ms() >= ms)
            .map(Record::op_id)
    };
    if let Ok(ms) = parse_bound(text) {
        let ms = u64::try_from(ms).unwrap_or(0);
        return first_after(ms)
            .map(|id| (Point::Instant { text: text.into() }, id))
            .ok_or_else(|| {
                ContextError::Refused(format!(
                    "nothing was recorded at or after {text}: there is nothing to reset"
                ))
            });
    }
    if let Some(first) = ledger
        .records()
        .iter()
        .filter(shared)
        .find(|r| r.actor.session.as_deref() == Some(text))
    {
        return Ok((
            Point::Session {
                session: text.into(),
            },
            first.op_id(),
        ));
    }
    let ids = ledger.ids();
    match resolve(text, &ids) {
        Ok(id) => Ok((Point::Operation { id: *id }, *id)),
        Err(crate::ops::id::ResolveError::NotAnId(_)) => Err(ContextError::Usage(format!(
            "`{text}` is neither a session that recorded something, a date (2026-12-01), an RFC 3339 instant nor an operation id"
        ))),
        Err(e) => Err(e.into()),
    }
}
