//! `kapi context reset`

use crate::cli::commands::{Ctx, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::reset::{Point, Subjected};
use crate::context::{ResetRequest, reset};

/// Go back to how the context stood at an earlier point: every rule, note
/// and decision recorded from the point on is set aside (status `reset`)
/// and stops answering. Nothing is erased: `kapi context log --status
/// reset` lists what was set aside, and a reset to before this reset
/// brings it back. Only a person resets.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The point: an agent session (before its first operation), a date
    /// (2026-12-01) or an RFC 3339 instant (before it), or an operation id
    /// or unambiguous prefix (before that operation).
    #[arg(long, value_name = "POINT")]
    pub before: String,
    /// Say what the reset would set aside and record nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Why, in your words.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let mut report = reset(
        &session,
        &ResetRequest {
            before: args.before,
            dry_run: args.dry_run,
            note: args.note,
        },
    )?;
    let mut out = Out::new();
    let failed = report.refresh_error.take();
    if args.json {
        out.json(&report)?;
        return report_rules_files(&session, &[], failed, &mut out).map(|()| Exit::Ok);
    }
    let point = match &report.point {
        Point::Session { session } => format!("session {session}"),
        Point::Instant { text } => text.clone(),
        Point::Operation { id } => format!("#{}", id.short()),
    };
    let first = report.before.short();
    match &report.recorded {
        Some(r) => out.line(format!(
            "recorded #{} reset: everything from #{first} on is set aside (before {point})",
            r.short()
        ))?,
        None => out.line(format!(
            "dry run, nothing recorded: a reset before {point} would set aside everything from #{first} on"
        ))?,
    }
    let verb = if report.dry_run { "would be" } else { "" };
    section(
        &mut out,
        &format!(
            "Set aside{}:",
            if verb.is_empty() {
                String::new()
            } else {
                format!(" ({verb})")
            }
        ),
        &report.set_aside,
    )?;
    out.line(format!(
        "{} decision{} set aside with them",
        report.decisions,
        if report.decisions == 1 { "" } else { "s" }
    ))?;
    section(&mut out, "Answers again:", &report.answer_again)?;
    report_rules_files(&session, &report.refreshed, failed, &mut out)?;
    Ok(Exit::Ok)
}

fn section(out: &mut Out, title: &str, items: &[Subjected]) -> Result<(), CliError> {
    if items.is_empty() {
        return Ok(());
    }
    out.line(title)?;
    for s in items {
        let was = s.was.map(|w| w.as_str()).unwrap_or("new");
        out.line(format!(
            "  #{} {} {} (was {was}, now {})",
            s.short,
            s.kind.as_str(),
            s.subject,
            s.now.as_str()
        ))?;
    }
    Ok(())
}
