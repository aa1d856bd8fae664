//! `kapi context log`

use crate::cli::commands::{Ctx, contested_by};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{Out, stderr_line};
use crate::context::log::{Arrivals, Filter, LogEntry, listing, query, wants};
use crate::ops::record::{Actor, Kind, Record};
use crate::ops::{State, Status};
use crate::wording::{count, noun};

/// List every operation in the log, folded: a line shows the short id, the
/// kind, the status and subject, `[contested by #…]`, who recorded it, and
/// a suggestion's standing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only subjects with this status: suggested, established, contested, withdrawn, dropped, reset.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<Status>,
    /// Only what a session recorded; `this` is the calling session (KAPI_SESSION).
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// Only what this actor recorded (a name or e-mail, or `you`).
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    /// Only operations of this kind (observe, correct, keep, drop, withdraw, ...).
    #[arg(long, value_name = "KIND", value_parser = parse_kind)]
    pub kind: Option<Kind>,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Read the log as it stood at this instant (RFC 3339) or at the end of
    /// this date (UTC).
    #[arg(long, value_name = "WHEN", value_parser = crate::cli::commands::parse_as_of)]
    pub as_of: Option<u64>,
    /// Under each rule or note, every status it took and when (the instant
    /// the log accepted the operation that made it, and that operation).
    #[arg(long, conflicts_with = "as_of")]
    pub history: bool,
    /// Only what arrived in this clone's log after this arrival position
    /// (recorded here or merged in from elsewhere), in arrival order, and
    /// the position now: a watcher polls with the position it was given.
    /// `0` lists everything.
    #[arg(long, value_name = "POSITION", conflicts_with_all = ["as_of", "history"])]
    pub since: Option<u64>,
    /// The generation the position belongs to (given with every position):
    /// a position of another generation lists everything again.
    #[arg(long, value_name = "GENERATION", requires = "since")]
    pub generation: Option<String>,
}

fn parse_status(s: &str) -> Result<Status, String> {
    Status::parse(s).ok_or_else(|| {
        let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
        format!("unknown status; one of {}", all.join(", "))
    })
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    Kind::parse(s).ok_or_else(|| {
        let all: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        format!("unknown kind; one of {}", all.join(", "))
    })
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let filter = Filter {
        status: args.status,
        kind: args.kind,
        session: args.session,
        actor: args.actor,
    }
    .resolve(&session)?;
    if let Some(since) = args.since {
        return run_since(
            &session,
            &filter,
            since,
            args.generation.as_deref(),
            args.json,
        );
    }
    // A listing by status, or of a kind decisions hold, reads part of the
    // log (`listing`); the histories are read the same way.
    let (histories, listed, unreadable) = if args.history {
        // The histories kept beside the checkpoint, with the fold shaped
        // as the listing without them would read it.
        let (h, unreadable) = session.histories_for(wants(&filter))?;
        (Some(h), None, unreadable)
    } else {
        let (listed, unreadable) = listing(&session, &filter, args.as_of)?;
        (None, Some(listed), unreadable)
    };
    let folded: &crate::ops::Ledger = match (&histories, &listed) {
        (Some(h), _) => &h.ledger,
        (None, Some(l)) => l,
        (None, None) => unreachable!("one of the two is read"),
    };
    let mut out = Out::new();
    let entries = query(folded, &filter);
    if entries.is_empty() && !args.json {
        // Say why nothing follows; JSON Lines stay empty. A view holds
        // part of the log and counts the whole.
        let held = folded.log_len();
        let at = args.as_of.map(crate::ops::id::rfc3339_ms);
        if held == 0 && unreadable == 0 {
            out.line(match at {
                Some(at) => format!("the log was empty at {at}: nothing was recorded by then"),
                None => "the log is empty: nothing is recorded yet".to_owned(),
            })?;
        } else if held > 0 {
            out.line(format!(
                "no operation matches: the log holds {}",
                count(held, "operation", "operations")
            ))?;
        }
    }
    for entry in entries {
        let changes = histories
            .as_ref()
            .map(|h| h.of(&entry.record.op_id()))
            .unwrap_or_default();
        if args.json {
            let mut json = entry.to_json();
            if histories.is_some() {
                json["history"] = serde_json::to_value(changes).unwrap_or_default();
            }
            out.exact(json.to_string())?;
        } else {
            out.line(entry_line(&entry, &session))?;
            for c in changes {
                out.line(format!(
                    "    {} {} by #{}",
                    crate::ops::id::rfc3339_ms(c.at_ms),
                    c.to.as_str(),
                    c.by.short()
                ))?;
            }
        }
    }
    session.release(histories);
    session.release(listed);
    warn_unreadable(unreadable);
    Ok(Exit::Ok)
}

/// Say how many stored lines were skipped, if any.
fn warn_unreadable(unreadable: usize) {
    if unreadable > 0 {
        stderr_line(format!(
            "warning: {} could not be read and {} skipped; `kapi store doctor` names {}",
            count(unreadable, "stored operation", "stored operations"),
            noun(unreadable, "was", "were"),
            noun(unreadable, "it", "them"),
        ));
    }
}

/// `--since`: what arrived after a position, and the position now (JSON:
/// one document, docs/operations.md "Arrival positions").
fn run_since(
    session: &crate::context::Session,
    filter: &Filter,
    since: u64,
    generation: Option<&str>,
    json: bool,
) -> Result<Exit, CliError> {
    let arrivals = Arrivals::read(session, since, generation)?;
    let entries = arrivals.entries(filter);
    let at = &arrivals.since;
    let mut out = Out::new();
    if at.restarted {
        stderr_line(format!(
            "note: position {since}{} is not one of this log's (generation {}, position {}): everything is listed, from position 0",
            generation
                .map(|g| format!(" of generation {g}"))
                .unwrap_or_default(),
            at.generation,
            at.position
        ));
    }
    if json {
        out.json(&arrivals.document(&entries))?;
    } else {
        for entry in &entries {
            out.line(entry_line(entry, session))?;
        }
        out.line(format!(
            "position {} (generation {}): `kapi context log --since {} --generation {}` lists what arrives next",
            at.position, at.generation, at.position, at.generation
        ))?;
    }
    warn_unreadable(arrivals.unreadable);
    session.release(arrivals);
    Ok(Exit::Ok)
}

/// One entry of the log as a person reads it: its line, who signed it
/// (where signatures are judged) and why the fold ignored it, if it did.
fn entry_line(entry: &LogEntry, session: &crate::context::Session) -> String {
    let mut line = human_line(entry.record, entry.state, session.actor());
    if let Some(mark) = entry.signature_mark(session.trust().is_some()) {
        line.push_str(&format!(" {mark}"));
    }
    if let Some(reason) = entry.ignored {
        line.push_str(&format!(" [ignored: {reason}]"));
    }
    line
}

/// One operation as a line; what `reader` recorded is "you", a teammate's
/// operation is under the teammate's name (the JSON lines name every
/// party the same way for every reader).
fn human_line(record: &Record, state: Option<&State>, reader: &Actor) -> String {
    let mut line = format!("{} {:<9}", record.short(), record.kind.as_str());
    if let Some(state) = state {
        line.push_str(&format!(" {:<11}", state.status.as_str()));
    }
    match (record.subject.as_deref(), &record.correction) {
        (Some(subject), Some(c)) => line.push_str(&format!(
            " \"{}\" → \"{}\", suggests {}",
            c.from,
            c.to,
            subject.describe()
        )),
        (Some(subject), None) => line.push_str(&format!(" {}", subject.describe())),
        (None, Some(c)) => line.push_str(&format!(" \"{}\" → \"{}\"", c.from, c.to)),
        (None, None) => {}
    }
    if let Some(target) = &record.target {
        line.push_str(&format!(" → #{}", &target[..10.min(target.len())]));
    }
    if let Some(state) = state {
        if let Some(contest) = contested_by(&state.contested_by) {
            line.push_str(&format!(" {contest}"));
        }
        if state.advisory {
            line.push_str(" (advisory)");
        }
    }
    if record.actor.same_party(reader) {
        line.push_str(" · you");
    } else {
        line.push_str(&format!(" · {}", record.actor.label()));
    }
    if let Some(standing) = state.and_then(State::standing_text) {
        line.push_str(&format!(" · {standing}"));
    }
    line
}
