//! `kapi context review`

use crate::cli::commands::{Ctx, contested_by, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::{ReviewRequest, pending_from, review};

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
    /// Without --keep or --drop: list only what this session recorded
    /// (`kapi context session <id>` shows what else it did).
    #[arg(long, value_name = "SESSION", conflicts_with_all = ["keep", "drop"])]
    pub session: Option<String>,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let mut out = Out::new();
    if args.keep.is_empty() && args.drop.is_empty() {
        let ledger = session.ledger()?;
        let waiting = pending_from(&ledger, args.session.as_deref());
        let disagreeing = if args.session.is_none() {
            crate::context::disagreements(&session, &ledger)?
        } else {
            Vec::new()
        };
        session.release(ledger);
        for p in &waiting {
            let contest = contested_by(&p.contested_by)
                .map(|c| format!(" {c}"))
                .unwrap_or_default();
            let standing = p
                .standing
                .as_ref()
                .map(|s| format!(" · {s}"))
                .unwrap_or_default();
            out.line(format!(
                "{} {} {}{contest} · {}{standing}",
                p.short,
                p.status.as_str(),
                p.subject,
                p.actor,
            ))?;
        }
        if !disagreeing.is_empty() {
            out.line(format!(
                "imported rules that disagree ({}; both report until one file changes):",
                disagreeing.len()
            ))?;
            for d in &disagreeing {
                out.line(format!(
                    "  {}",
                    crate::cli::commands::store::import::said(d)
                ))?;
            }
        }
        if waiting.is_empty() {
            out.line("nothing awaits a decision")?;
        } else {
            out.line(format!(
                "{} awaiting a decision: kapi context review --keep <id> | --drop <id>",
                waiting.len()
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
    let mut reviewed = review(&session, request)?;
    for record in &reviewed.recorded {
        let target = record.target.as_deref().unwrap_or_default();
        out.line(format!(
            "recorded #{} {} #{}",
            record.short(),
            record.kind.as_str(),
            crate::ops::id::short(target)
        ))?;
    }
    report_rules_files(
        &session,
        &reviewed.refreshed,
        reviewed.refresh_error.take(),
        &mut out,
    )?;
    Ok(Exit::Ok)
}
