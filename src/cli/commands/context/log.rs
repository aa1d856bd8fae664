//! `kapi context log`

use serde_json::json;

use crate::cli::commands::{Ctx, contested_by};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::ops::record::{Kind, Record};
use crate::ops::{State, Status};

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
    let ledger = session.ledger()?;
    let this_session = match args.session.as_deref() {
        Some("this") => Some(ctx.var("KAPI_SESSION").filter(|s| !s.is_empty()).ok_or_else(|| {
            CliError::usage("--session this reads KAPI_SESSION, which is not set; name the session instead")
        })?),
        other => other.map(str::to_owned),
    };
    let actor = match args.actor.as_deref() {
        Some("you") => Some(session.actor.name.clone()),
        other => other.map(str::to_owned),
    };
    let ignored: std::collections::HashMap<&str, &str> = ledger
        .ignored
        .iter()
        .map(|i| (i.id.as_str(), i.reason.as_str()))
        .collect();
    let mut out = Out::new();
    for record in &ledger.records {
        let state = ledger.state(&record.id);
        if args
            .status
            .is_some_and(|s| state.map(|st| st.status) != Some(s))
            || args.kind.is_some_and(|k| record.kind != k)
            || this_session
                .as_ref()
                .is_some_and(|s| record.actor.session.as_ref() != Some(s))
            || actor.as_ref().is_some_and(|a| &record.actor.name != a)
        {
            continue;
        }
        if args.json {
            let mut line = json_line(record, state);
            line["ignored"] = ignored
                .get(record.id.as_str())
                .map(|r| serde_json::Value::from(*r))
                .unwrap_or_default();
            out.line(line.to_string())?;
        } else {
            let mut line = human_line(record, state);
            if let Some(reason) = ignored.get(record.id.as_str()) {
                line.push_str(&format!(" [ignored: {reason}]"));
            }
            out.line(line)?;
        }
    }
    // The process ends now: freeing a large log costs more than it returns.
    std::mem::forget(ledger);
    Ok(Exit::Ok)
}

fn human_line(record: &Record, state: Option<&State>) -> String {
    let mut line = format!("{} {:<9}", record.short(), record.kind.as_str());
    if let Some(state) = state {
        line.push_str(&format!(" {:<11}", state.status.as_str()));
    }
    match (&record.subject, &record.correction) {
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
    line.push_str(&format!(" · {}", record.actor.label()));
    if let Some(state) = state
        && matches!(state.status, Status::Suggested | Status::Contested)
        && state.standing.sessions > 0
    {
        line.push_str(&format!(" · {}", state.standing.describe()));
    }
    line
}

fn json_line(record: &Record, state: Option<&State>) -> serde_json::Value {
    json!({
        "id": record.id,
        "short": record.short(),
        "kind": record.kind.as_str(),
        "at": record.at,
        "actor": record.actor,
        "status": state.map(|s| s.status.as_str()),
        "established": state.map(|s| s.status == crate::ops::Status::Established),
        "subject": record.subject,
        "correction": record.correction,
        "evidence": record.evidence,
        "scope": state.map(|s| &s.scope).unwrap_or(&record.scope),
        "target": record.target,
        "note": record.note,
        "contested_by": state.map(|s| s.contested_by.clone()).unwrap_or_default(),
        "standing": state.filter(|s| matches!(s.status, Status::Suggested | Status::Contested)).map(|s| &s.standing),
        "advisory": state.map(|s| s.advisory),
    })
}
