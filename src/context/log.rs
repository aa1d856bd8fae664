//! `kapi context log` as a query: every operation of the folded log, with
//! its state, filtered. A [`LogEntry`] serializes as one line of
//! `kapi context log --json`.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::json;

use super::checkpointed::Want;
use super::{ContextError, Session};
use crate::ops::record::{Kind, Record};
use crate::ops::{Ledger, State, Status};
use crate::store::arrivals::Since;

/// Which operations to list; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only subjects with this status.
    pub status: Option<Status>,
    /// Only operations of this kind.
    pub kind: Option<Kind>,
    /// Only what this session recorded.
    pub session: Option<String>,
    /// Only what this actor (a name or e-mail) recorded.
    pub actor: Option<String>,
}

impl Filter {
    /// Resolve the caller's shorthands: the session `this` is the calling
    /// session (`KAPI_SESSION`), the actor `you` is whoever is acting.
    pub fn resolve(mut self, session: &Session) -> Result<Self, ContextError> {
        if self.session.as_deref() == Some("this") {
            let this = session
                .env()
                .var("KAPI_SESSION")
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    ContextError::Usage(
                        "--session this reads KAPI_SESSION, which is not set; name the session instead"
                            .into(),
                    )
                })?;
            self.session = Some(this);
        }
        if self.actor.as_deref() == Some("you") {
            self.actor = Some(session.actor().name.to_string());
        }
        Ok(self)
    }

    fn admits(&self, record: &Record, state: Option<&State>) -> bool {
        !(self
            .status
            .is_some_and(|s| state.map(|st| st.status) != Some(s))
            || self.kind.is_some_and(|k| record.kind != k)
            || self
                .session
                .as_ref()
                .is_some_and(|s| record.actor.session.as_deref() != Some(s.as_str()))
            || self.actor.as_ref().is_some_and(|a| record.actor.name != a))
    }
}

/// One operation of the log with its folded state.
#[derive(Debug, Clone, Copy)]
pub struct LogEntry<'a> {
    pub record: &'a Record,
    /// The state of a subject-bearing operation.
    pub state: Option<&'a State>,
    /// Why the fold ignored the operation, if it did.
    pub ignored: Option<&'a str>,
    /// Whose signature on it verified (`[trust]`), if one did.
    pub signed_by: Option<&'a str>,
}

impl LogEntry<'_> {
    /// `✓ ada@example.com` for an operation whose signature verified,
    /// `signed (not verified)` for one signed where no `[trust]` names an
    /// allowed-signers file to verify it by; nothing otherwise.
    pub fn signature_mark(&self, trusted: bool) -> Option<String> {
        match (self.signed_by, &self.record.sig) {
            (Some(principal), _) => Some(format!("✓ {principal}")),
            (None, Some(_)) if !trusted => Some("signed (not verified: no [trust])".into()),
            _ => None,
        }
    }
}

impl LogEntry<'_> {
    /// The JSON object of `kapi context log --json` (docs/ledger.md).
    pub fn to_json(self) -> serde_json::Value {
        let (record, state) = (self.record, self.state);
        let mut value = json!({
            "id": record.id,
            "short": record.short(),
            "kind": record.kind.as_str(),
            "at": record.at,
            "actor": record.actor,
            "status": state.map(|s| s.status.as_str()),
            "established": state.map(|s| s.status == Status::Established),
            "subject": record.subject,
            "correction": record.correction,
            "evidence": record.evidence,
            "scope": state.map(|s| &s.scope).unwrap_or(&record.scope),
            "target": record.target,
            "note": record.note,
            "contested_by": state.map(|s| s.contested_by.clone()).unwrap_or_default(),
            "standing": state.filter(|s| matches!(s.status, Status::Suggested | Status::Contested) || !s.because.is_empty()).map(|s| &s.standing),
            "because": state.map(|s| s.because.clone()).unwrap_or_default(),
            "drift": state.and_then(|s| s.drift).map(|(then, now)| json!({"then": then, "now": now})),
            "signal": record.signal,
            "advisory": state.map(|s| s.advisory),
            "ignored": self.ignored,
        });
        // Only a signed operation says so (and whose signature verified).
        if record.sig.is_some() {
            value["signed"] = true.into();
            value["signed_by"] = self.signed_by.into();
        }
        value
    }
}

impl Serialize for LogEntry<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// What a listing reads: the fold [`listing`] chose, which [`query`]
/// lists as it would list the whole ledger.
pub enum Listing {
    /// The reader's view: every subject with its state.
    View(std::rc::Rc<super::checkpointed::SharedView>),
    /// The view with every decision beside it, or the whole ledger.
    Ledger(Box<Ledger>),
}

impl std::ops::Deref for Listing {
    type Target = Ledger;

    fn deref(&self) -> &Ledger {
        match self {
            Listing::View(view) => view,
            Listing::Ledger(ledger) => ledger,
        }
    }
}

/// What a listing by `filter` needs of the fold. Only a subject has a
/// status, and the reader's view holds every subject with its state: a
/// listing by status needs the view. A listing of a kind other than usage
/// signals and check runs (most of a long log) needs the view with every
/// decision beside it. Anything else needs the whole ledger. [`query`]
/// over any of them lists what it lists over the whole ledger.
pub fn wants(filter: &Filter) -> Want {
    if filter.status.is_some() {
        Want::View
    } else if filter.kind.is_some_and(Ledger::decisions_hold) {
        Want::Decisions
    } else {
        Want::Full
    }
}

/// The fold a listing by `filter` reads ([`wants`]; any listing as of an
/// instant, `as_of` Unix ms, reads the whole ledger), with how many stored
/// lines could not be read. At 1,000,000 operations the view and the
/// decisions are read in milliseconds, the ledger in a second.
pub fn listing(
    session: &Session,
    filter: &Filter,
    as_of: Option<u64>,
) -> Result<(Listing, usize), ContextError> {
    let want = if as_of.is_some() {
        Want::Full
    } else {
        wants(filter)
    };
    Ok(match want {
        Want::View => {
            let (view, unreadable) = session.rules_view(None)?;
            (Listing::View(view), unreadable)
        }
        Want::Decisions => {
            let (decisions, unreadable) = session.decisions_ledger()?;
            (Listing::Ledger(Box::new(decisions)), unreadable)
        }
        Want::Full => {
            let (ledger, unreadable) = session.ledger_as_of(as_of)?;
            (Listing::Ledger(Box::new(ledger)), unreadable)
        }
    })
}

/// The operations of `ledger` the filter admits, in id order.
pub fn query<'a>(ledger: &'a Ledger, filter: &Filter) -> Vec<LogEntry<'a>> {
    entries(ledger, ledger.records().iter(), filter)
}

/// The entries of `records` (held by `ledger`) the filter admits, in the
/// order given.
fn entries<'a>(
    ledger: &'a Ledger,
    records: impl Iterator<Item = &'a Record>,
    filter: &Filter,
) -> Vec<LogEntry<'a>> {
    let ignored: HashMap<&str, &str> = ledger
        .ignored
        .iter()
        .map(|i| (i.id.as_str(), i.reason.as_str()))
        .collect();
    records
        .map(|record| (record, ledger.state(&record.op_id())))
        .filter(|(record, state)| filter.admits(record, *state))
        .map(|(record, state)| LogEntry {
            record,
            state,
            ignored: ignored.get(record.id.as_str()).copied(),
            signed_by: ledger.signed_by(&record.id),
        })
        .collect()
}

/// What arrived after an arrival position (`kapi context log --since`):
/// the folded log, how many stored lines could not be read, and the
/// arrival record's answer (`store::arrivals`).
pub struct Arrivals {
    pub ledger: Ledger,
    pub unreadable: usize,
    pub since: Since,
}

impl Arrivals {
    /// Read the log and what arrived in it after `since` (a position of
    /// `generation`, when the caller names one).
    pub fn read(
        session: &Session,
        since: u64,
        generation: Option<&str>,
    ) -> Result<Self, ContextError> {
        // The tips first: the ledger read after them holds at least what
        // they hold, so the record is never marked caught up past it.
        let tips = session.store.tips()?;
        let (ledger, unreadable) = session.ledger_and_unreadable()?;
        let since = session
            .store
            .arrivals_since(tips, &ledger.ids(), since, generation, || {
                new_generation(session.env().random())
            })?;
        Ok(Self {
            ledger,
            unreadable,
            since,
        })
    }

    /// The operations that arrived, in arrival order, that `filter` admits.
    pub fn entries(&self, filter: &Filter) -> Vec<LogEntry<'_>> {
        let records = self
            .since
            .arrived
            .iter()
            .filter_map(|id| self.ledger.get(id));
        entries(&self.ledger, records, filter)
    }

    /// The `--json` document (and the MCP tool's answer): the position,
    /// its generation, whether it restarted, and `entries` (of
    /// [`Arrivals::entries`]).
    pub fn document(&self, entries: &[LogEntry<'_>]) -> serde_json::Value {
        json!({
            "position": self.since.position,
            "generation": self.since.generation,
            "restarted": self.since.restarted,
            "operations": entries,
        })
    }
}

/// A new arrival record's generation: the call's randomness mixed with the
/// machine's clock and the process, so a record started again is never
/// named like the one before it, even under a pinned seed (`KAPI_SEED`).
fn new_generation(random: u128) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = crate::digest::sha256_hex(
        format!("{random:x} {nanos:x} {:x}", std::process::id()).as_bytes(),
    );
    mixed[..12].to_owned()
}
