//! `kapi context review`

use std::io::{BufRead, IsTerminal, Write};

use crate::cli::commands::{Ctx, contested_by, report_rules_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::{Out, stderr_line, stderr_text};
use crate::context::review::left_text;
use crate::context::{Pending, ReviewRequest, Reviewed, Session, pending_from, review};
use crate::ops::widen::WidenTo;

/// Decide what becomes a rule. Keep a suggestion and it binds: `kapi check`
/// fails on it (unless --advisory). Drop a suggestion or a rule in force and
/// it falls silent. Choose a side of a disagreement. Widen a rule to where
/// it should also hold. Only a person decides.
///
/// Without a decision, in a terminal, it walks the digest one item at a
/// time and asks; elsewhere it prints the digest. Decisions given as flags
/// are one round, recorded in a fixed order: the choice, the drops, the
/// keeps, the widenings.
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
            || args.widen_to.is_some();
        if for_keeps {
            return Err(CliError::usage(
                "--valid-from, --valid-to, --advisory and --widen-to go with a decision",
            )
            .with_hint("add --keep <id>, --choose <id> or --widen <id>"));
        }
        let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        if args.interactive || (terminal && !args.json) {
            return walk(&session, args.session.as_deref());
        }
        return print_digest(&session, args.session.as_deref(), args.json);
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
fn report(session: &Session, mut reviewed: Reviewed, out: &mut Out) -> Result<(), CliError> {
    for record in &reviewed.recorded {
        let target = record.target.as_deref().unwrap_or_default();
        let mut line = format!(
            "recorded #{} {} #{}",
            record.short(),
            record.kind.as_str(),
            crate::ops::id::short(target)
        );
        if record.kind == crate::ops::Kind::Widen {
            line.push_str(&format!(": now holds {}", where_(&record.scope)));
        }
        out.line(line)?;
    }
    for note in &reviewed.notes_kept {
        out.line(format!(
            "the note #{} is kept in the operation log (refs/kapi/ops), its only record: a note states no rule, so no store holds it",
            crate::ops::id::short(note)
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

/// `across the workspace at brand=acme`, `at channel=app`, `across the project`.
fn where_(scope: &crate::ops::record::Scope) -> String {
    let axes = crate::ops::scope::pairs(&scope.point);
    let across = if scope.workspace {
        "across the workspace"
    } else {
        "in the project"
    };
    if axes.is_empty() {
        format!("{across}, everywhere")
    } else {
        format!("{across} at {}", axes.join(", "))
    }
}

/// One digest line: `0ttd83m11q suggested "X", not "Y" [contested by #…]
/// · agent claude-code [s1] · seen in 1 session · droppable, widenable`.
fn line(p: &Pending) -> String {
    let contest = contested_by(&p.contested_by)
        .map(|c| format!(" {c}"))
        .unwrap_or_default();
    let at = if p.scope.point.is_empty() && !p.scope.workspace {
        String::new()
    } else {
        format!(" [{}]", where_(&p.scope))
    };
    let standing = p
        .standing
        .as_ref()
        .map(|s| format!(" · {s}"))
        .unwrap_or_default();
    let mut may = Vec::new();
    if p.keepable {
        may.push(if p.contested_by.is_empty() {
            "keepable"
        } else {
            "choosable"
        });
    }
    if p.droppable {
        may.push("droppable");
    }
    if p.widenable {
        may.push("widenable");
    }
    // The other operations that state the rule: one item, every member.
    let also: Vec<String> = p
        .members
        .iter()
        .skip(1)
        .map(|m| {
            let at = if m.scope == p.scope {
                String::new()
            } else {
                format!(" [{}]", where_(&m.scope))
            };
            format!("#{} ({}){at}", m.short, m.actor)
        })
        .collect();
    let also = if also.is_empty() {
        String::new()
    } else {
        format!(" · also {}", also.join(", "))
    };
    format!(
        "{} {} {}{at}{contest} · {}{also}{standing} · {}",
        p.short,
        p.status.as_str(),
        p.subject,
        p.actor,
        may.join(", ")
    )
}

/// The decisions the items awaiting one allow, each offered only when
/// some item takes it (a drifting rule in force is dropped or widened,
/// never kept again).
fn decisions(awaiting: &[&Pending]) -> Vec<&'static str> {
    let mut verbs = Vec::new();
    if awaiting
        .iter()
        .any(|p| p.keepable && p.contested_by.is_empty())
    {
        verbs.push("--keep <id>");
    }
    if awaiting.iter().any(|p| p.droppable) {
        verbs.push("--drop <id>");
    }
    if awaiting
        .iter()
        .any(|p| p.keepable && !p.contested_by.is_empty())
    {
        verbs.push("--choose <id>");
    }
    if awaiting.iter().any(|p| p.widenable) {
        verbs.push("--widen <id> --widen-to <where>");
    }
    verbs
}

fn print_digest(session: &Session, of: Option<&str>, json: bool) -> Result<Exit, CliError> {
    let ledger = session.ledger()?;
    let digest = pending_from(&ledger, of);
    // Imported rules that disagree: both report until one file changes.
    let disagreeing = if of.is_none() {
        crate::context::disagreements(session, &ledger)?
    } else {
        Vec::new()
    };
    session.release(ledger);
    let mut out = Out::new();
    if json {
        out.exact(
            serde_json::json!({ "awaiting": digest.iter().filter(|p| p.awaiting).collect::<Vec<_>>(),
                "in_force": digest.iter().filter(|p| !p.awaiting).collect::<Vec<_>>() })
            .to_string(),
        )?;
        return Ok(Exit::Ok);
    }
    let (awaiting, in_force): (Vec<&Pending>, Vec<&Pending>) =
        digest.iter().partition(|p| p.awaiting);
    if !awaiting.is_empty() {
        out.line("Awaiting a decision:")?;
        for p in &awaiting {
            out.line(format!("  {}", line(p)))?;
        }
    }
    if !in_force.is_empty() {
        out.line("In force:")?;
        for p in &in_force {
            out.line(format!("  {}", line(p)))?;
        }
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
    if awaiting.is_empty() {
        out.line("nothing awaits a decision")?;
    } else {
        out.line(format!(
            "{} awaiting a decision: kapi context review {}",
            awaiting.len(),
            decisions(&awaiting).join(" | ")
        ))?;
    }
    Ok(Exit::Ok)
}

/// The terminal walk: each item of the digest, awaiting ones first, and a
/// question; every answer is one round through the same library call the
/// flags use.
fn walk(session: &Session, of: Option<&str>) -> Result<Exit, CliError> {
    let mut seen: Vec<String> = Vec::new();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut decided = 0usize;
    loop {
        let ledger = session.ledger()?;
        let digest = pending_from(&ledger, of);
        session.release(ledger);
        let next = digest
            .iter()
            .filter(|p| p.awaiting)
            .chain(digest.iter().filter(|p| !p.awaiting))
            .find(|p| !seen.contains(&p.id))
            .cloned();
        let Some(item) = next else {
            break;
        };
        seen.push(item.id.clone());
        let mut choices = Vec::new();
        if item.keepable && item.contested_by.is_empty() {
            choices.push("[k]eep");
        }
        if item.droppable {
            choices.push("[d]rop");
        }
        if !item.contested_by.is_empty() {
            choices.push("[c]hoose");
        }
        if item.widenable || (item.keepable && item.contested_by.is_empty()) {
            choices.push("[w]iden");
        }
        choices.extend(["[s]kip", "[q]uit"]);
        let prompt = format!(
            "{}\n  {}? ",
            crate::terminal::escape(&line(&item)),
            choices.join(" / ")
        );
        loop {
            let Some(answer) = ask(&mut input, &prompt)? else {
                return finish(decided);
            };
            let mut req = ReviewRequest::default();
            match answer.to_lowercase().as_str() {
                "k" | "keep" => req.keep.push(item.id.clone()),
                "d" | "drop" => req.drop.push(item.id.clone()),
                "c" | "choose" => req.choose = Some(item.id.clone()),
                "w" | "widen" => {
                    let Some(to) = ask(&mut input, "  widen to (an axis, project or workspace)? ")?
                    else {
                        return finish(decided);
                    };
                    match WidenTo::parse(&to) {
                        Ok(to) => req.widen_to = Some(to),
                        Err(e) => {
                            stderr_text(format!("error: {e}"));
                            continue;
                        }
                    }
                    if item.keepable {
                        req.keep.push(item.id.clone());
                    } else {
                        req.widen.push(item.id.clone());
                    }
                }
                "s" | "skip" | "" => break,
                "q" | "quit" => return finish(decided),
                other => {
                    stderr_line(format!(
                        "error: `{other}` is not one of {}",
                        choices.join(", ")
                    ));
                    continue;
                }
            }
            match review(session, req) {
                Ok(reviewed) => {
                    decided += reviewed.recorded.len();
                    let mut out = Out::new();
                    report(session, reviewed, &mut out)?;
                    out.flush()?;
                    break;
                }
                Err(e) => {
                    let e = CliError::from(e);
                    if e.exit == Exit::Store {
                        return Err(e);
                    }
                    // A refused or impossible decision: say why and ask again.
                    stderr_text(e.render());
                }
            }
        }
    }
    finish(decided)
}

fn finish(decided: usize) -> Result<Exit, CliError> {
    let mut out = Out::new();
    out.line(format!(
        "review done: {decided} operation{} recorded",
        if decided == 1 { "" } else { "s" }
    ))?;
    Ok(Exit::Ok)
}

/// Print `prompt`, read one answer (trimmed); `None` at the
/// end of input.
fn ask(input: &mut impl BufRead, prompt: &str) -> Result<Option<String>, CliError> {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(prompt.as_bytes());
    let _ = out.flush();
    let mut answer = String::new();
    match input.read_line(&mut answer) {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(answer.trim().to_owned())),
        Err(e) => Err(CliError::io("cannot read the answer", &e)),
    }
}
