//! `kapi context review`: the flags make one round; without a decision
//! the digest is printed (`digest.rs`) or, in a terminal, walked
//! (`walk.rs`). What each item takes and what a round records is the
//! library's (`context::decisions`, `context::review`).

mod digest;
mod walk;

use std::io::IsTerminal;

use crate::cli::commands::{Ctx, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::review::left_text;
use crate::context::{ReviewRequest, Reviewed, Session, review};
use crate::ops::widen::WidenTo;

/// Decide what becomes a rule. Keep a suggestion and it binds: `kapi check`
/// fails on it (unless --advisory). Drop a suggestion or a rule in force and
/// it falls silent. Choose a side of a disagreement. Widen a rule to where
/// it should also hold. Only a person decides.
///
/// Without a decision, in a terminal, it walks the digest one item at a
/// time and asks; elsewhere it prints the digest. Decisions given as flags
/// are one round, recorded in a fixed order: the choice, the drops, the
/// keeps, the widenings. A keep may carry a replacement (--replace-use,
/// --replace-avoid): the suggestion is kept with your forms, recorded as
/// keep + edit.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep this suggestion (an id or an unambiguous prefix; repeatable);
    /// `all` with --session keeps what the session suggested, except what
    /// is contested.
    #[arg(long, value_name = "ID")]
    pub keep: Vec<String>,
    /// Drop this suggestion or rule in force (repeatable).
    #[arg(long, value_name = "ID")]
    pub drop: Vec<String>,
    /// Settle a disagreement for this side: the other side is dropped and
    /// this one kept.
    #[arg(long, value_name = "ID")]
    pub choose: Option<String>,
    /// Widen this rule already in force (repeatable; with --widen-to).
    #[arg(long, value_name = "ID", requires = "widen_to")]
    pub widen: Vec<String>,
    /// Where what this round keeps, chooses or widens then holds: an axis
    /// (every value of it), `project` (every point of the project) or
    /// `workspace` (every repository registered with kapi on this machine).
    #[arg(long, value_name = "WHERE", value_parser = parse_widen_to)]
    pub widen_to: Option<WidenTo>,
    /// With --keep or --choose: the first instant the rule holds (date or
    /// RFC 3339), inclusive.
    #[arg(long, value_name = "WHEN")]
    pub valid_from: Option<String>,
    /// With --keep or --choose: the instant it stops holding, exclusive.
    #[arg(long, value_name = "WHEN")]
    pub valid_to: Option<String>,
    /// With --keep or --choose: the rule reports but never fails a check.
    #[arg(long)]
    pub advisory: bool,
    /// With one --keep or --choose: keep it with this form to use instead
    /// of the one proposed (recorded as keep + edit).
    #[arg(long, value_name = "FORM")]
    pub replace_use: Option<String>,
    /// With one --keep or --choose: the forms to avoid instead of those
    /// proposed (repeatable; variants derived).
    #[arg(long, value_name = "FORM")]
    pub replace_avoid: Vec<String>,
    /// Why, in your words.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Only what this session recorded; with `--keep all`, keep its
    /// suggestions (`kapi context session <id>` shows what else it did).
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// Print the digest (or what a round recorded) as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Walk the digest and ask, even when stdin or stdout is not a terminal.
    #[arg(long, hide = true, conflicts_with_all = ["keep", "drop", "choose", "widen", "json"])]
    pub interactive: bool,
}

fn parse_widen_to(text: &str) -> Result<WidenTo, String> {
    WidenTo::parse(text).map_err(|e| e.to_string())
}

impl Args {
    fn decides(&self) -> bool {
        !self.keep.is_empty()
            || !self.drop.is_empty()
            || self.choose.is_some()
            || !self.widen.is_empty()
    }
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    if !args.decides() {
        let for_keeps = args.valid_from.is_some()
            || args.valid_to.is_some()
            || args.advisory
            || args.widen_to.is_some()
            || args.replace_use.is_some()
            || !args.replace_avoid.is_empty();
        if for_keeps {
            return Err(CliError::usage(
                "--valid-from, --valid-to, --advisory, --widen-to and --replace-use/--replace-avoid go with a decision",
            )
            .with_hint("add --keep <id>, --choose <id> or --widen <id>"));
        }
        let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        if args.interactive || (terminal && !args.json) {
            return walk::walk(&session, args.session.as_deref());
        }
        return digest::print(&session, args.session.as_deref(), args.json);
    }
    let request = ReviewRequest {
        keep: args.keep,
        drop: args.drop,
        choose: args.choose,
        session: args.session,
        widen: args.widen,
        widen_to: args.widen_to,
        valid_from: args.valid_from,
        valid_to: args.valid_to,
        advisory: args.advisory,
        note: args.note,
        replace_use: args.replace_use,
        replace_avoid: args.replace_avoid,
    };
    let reviewed = review(&session, request)?;
    let mut out = Out::new();
    if args.json {
        out.json(&reviewed)?;
        report_rules_files(&session, &[], reviewed.refresh_error, &mut out)?;
        return Ok(Exit::Ok);
    }
    report(&session, reviewed, &mut out)?;
    Ok(Exit::Ok)
}

/// What a round recorded, what it left, and the rules files it refreshed.
pub(super) fn report(
    session: &Session,
    mut reviewed: Reviewed,
    out: &mut Out,
) -> Result<(), CliError> {
    for record in &reviewed.recorded {
        let target = record.target.as_deref().unwrap_or_default();
        let mut line = format!(
            "recorded #{} {} #{}",
            record.short(),
            record.kind.as_str(),
            crate::ops::id::short(target)
        );
        if record.kind == crate::ops::Kind::Widen {
            line.push_str(&format!(": now holds {}", digest::where_(&record.scope)));
        }
        if let (crate::ops::Kind::Edit, Some(subject)) = (record.kind, &record.subject) {
            line.push_str(&format!(": {}", subject.describe()));
        }
        out.line(line)?;
    }
    for note in &reviewed.notes_kept {
        out.line(format!(
            "the note #{} is kept in the operation log (refs/kapi/ops), its only record: a note states no rule, so no store holds it",
            note.short()
        ))?;
    }
    if !reviewed.left.is_empty() {
        out.line(format!("left for later: {}", left_text(&reviewed.left)))?;
    }
    if let Some(path) = &reviewed.shares_with_workspace {
        out.line(format!(
            "{} now shares the rules it widens to the workspace with every repository on this machine (`kapi workspace list`)",
            path.display()
        ))?;
    }
    report_rules_files(
        session,
        &reviewed.refreshed,
        reviewed.refresh_error.take(),
        out,
    )
}
