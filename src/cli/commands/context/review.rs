//! `kapi context review`

use crate::cli::commands::{Ctx, contested_by};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::{ReviewRequest, review};
use crate::ops::Status;

/// Decide what becomes a rule. Keep a suggestion and it binds: `kapi check`
/// fails on it (unless --advisory). Drop a suggestion or a rule in force and
/// it falls silent. Without --keep or --drop, list what awaits a decision.
/// Only a person decides.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep this suggestion (an id or an unambiguous prefix; repeatable).
    #[arg(long, value_name = "ID")]
    pub keep: Vec<String>,
    /// Drop this suggestion or rule (repeatable). Drops are recorded before keeps.
    #[arg(long, value_name = "ID")]
    pub drop: Vec<String>,
    /// With --keep: the first instant the rule holds (date or RFC 3339), inclusive.
    #[arg(long, value_name = "WHEN", requires = "keep")]
    pub valid_from: Option<String>,
    /// With --keep: the instant it stops holding, exclusive.
    #[arg(long, value_name = "WHEN", requires = "keep")]
    pub valid_to: Option<String>,
    /// With --keep: the rule reports but never fails a check.
    #[arg(long, requires = "keep")]
    pub advisory: bool,
    /// Why, in your words.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let mut out = Out::new();
    if args.keep.is_empty() && args.drop.is_empty() {
        let ledger = session.ledger()?;
        let mut waiting = 0;
        for record in &ledger.records {
            let Some(state) = ledger.state(&record.id) else {
                continue;
            };
            if !matches!(state.status, Status::Suggested | Status::Contested) {
                continue;
            }
            waiting += 1;
            let subject = record
                .subject
                .as_ref()
                .map(|s| s.describe())
                .unwrap_or_else(|| {
                    record
                        .correction
                        .as_ref()
                        .map(|c| format!("\"{}\" → \"{}\"", c.from, c.to))
                        .unwrap_or_default()
                });
            let contest = contested_by(&state.contested_by)
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            let standing = if state.standing.sessions > 0 {
                format!(" · {}", state.standing.describe())
            } else {
                String::new()
            };
            out.line(format!(
                "{} {} {subject}{contest} · {}{standing}",
                record.short(),
                state.status.as_str(),
                record.actor.label(),
            ))?;
        }
        if waiting == 0 {
            out.line("nothing awaits a decision")?;
        } else {
            out.line(format!(
                "{waiting} awaiting a decision: kapi context review --keep <id> | --drop <id>"
            ))?;
        }
        return Ok(Exit::Ok);
    }
    let request = ReviewRequest {
        keep: args.keep,
        drop: args.drop,
        valid_from: args.valid_from,
        valid_to: args.valid_to,
        advisory: args.advisory,
        note: args.note,
    };
    for record in review(&session, request)? {
        let target = record.target.as_deref().unwrap_or_default();
        out.line(format!(
            "recorded #{} {} #{}",
            record.short(),
            record.kind.as_str(),
            &target[..10]
        ))?;
    }
    crate::cli::commands::refresh_rules_files(&session, &mut out)?;
    Ok(Exit::Ok)
}
