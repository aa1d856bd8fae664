//! `kapi context <path>`

use crate::cli::commands::{Ctx, contested_by};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::{AtPath, Item, at_path};

/// What applies at a path: the established rules and kept notes in force
/// at its point, the suggestions there, and the rules held elsewhere in the
/// project but not there (wording that stays correct).
#[derive(Debug, clap::Args)]
#[group(skip)]
pub struct Args {
    /// A file or folder in the work tree.
    #[arg(value_name = "PATH")]
    pub path: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Read the log as it stood at this instant (RFC 3339) or at the end of
    /// this date (UTC), with rule windows read at it.
    #[arg(long, value_name = "WHEN", value_parser = crate::cli::commands::parse_as_of)]
    pub as_of: Option<u64>,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let Some(path) = args.path else {
        return Err(
            CliError::usage("no file, folder or subcommand given").with_hint(
                "`kapi context <path>` says what applies there; the subcommands (note, log, review, …) are in `kapi context --help`",
            ),
        );
    };
    misspelt_subcommand(&path, ctx)?;
    let session = ctx.session()?;
    let doc = at_path(&session, &path, args.as_of)?;
    let mut out = Out::new();
    if args.json {
        out.exact(doc.to_json().to_string())?;
        return Ok(Exit::Ok);
    }
    let AtPath { path, point, here } = doc;
    let as_of = args
        .as_of
        .map(|at| format!(" as of {}", crate::ops::id::rfc3339_ms(at)))
        .unwrap_or_default();
    let where_ = if point.is_empty() {
        String::new()
    } else {
        let axes = crate::ops::scope::pairs(&point);
        format!(" ({})", axes.join(", "))
    };
    out.line(format!("{path}{where_}{as_of}"))?;
    section(&mut out, "Rules in force", &here.rules)?;
    section(&mut out, "Notes a person kept", &here.notes)?;
    section(
        &mut out,
        "Pairs in force (the rendering kept for a phrase)",
        &here.pairs,
    )?;
    section(
        &mut out,
        "Suggestions here (advice, not yet established)",
        &here.suggestions,
    )?;
    section(
        &mut out,
        "Wording that stays correct here (rules held elsewhere, not here)",
        &here.elsewhere,
    )?;
    if here.rules.is_empty()
        && here.notes.is_empty()
        && here.suggestions.is_empty()
        && here.elsewhere.is_empty()
        && here.pairs.is_empty()
    {
        out.line("nothing applies here yet")?;
    }
    Ok(Exit::Ok)
}

/// Refuse a word that names no file here and is a subcommand misspelt
/// (`kapi context reveiw`), naming the subcommand, rather than read it as
/// a path that does not exist.
fn misspelt_subcommand(path: &str, ctx: &Ctx) -> Result<(), CliError> {
    if path.contains(['/', '\\']) || std::fs::symlink_metadata(ctx.cwd.join(path)).is_ok() {
        return Ok(());
    }
    let commands = <super::ContextCommand as clap::Subcommand>::augment_subcommands(
        clap::Command::new("context"),
    );
    let names = commands.get_subcommands().map(|c| c.get_name());
    match crate::wording::closest(path, names) {
        Some(name) => Err(CliError::usage(format!(
            "`{path}` is neither a file here nor a subcommand of kapi context"
        ))
        .with_hint(format!("did you mean `kapi context {name}`?"))),
        None => Ok(()),
    }
}

fn section(out: &mut Out, title: &str, items: &[Item]) -> Result<(), CliError> {
    if items.is_empty() {
        return Ok(());
    }
    out.line(format!("{title}:"))?;
    for item in items {
        let mut line = format!("  {}  #{}", item.describe(), item.short);
        // The other operations that state the same rule here.
        for other in item.members.iter().skip(1) {
            line.push_str(&format!(", #{}", other.short()));
        }
        if !item.scope.point.is_empty() {
            let axes = crate::ops::scope::pairs(&item.scope.point);
            line.push_str(&format!("  [{}]", axes.join(", ")));
        }
        if let Some(project) = &item.workspace {
            match &item.repository {
                Some(repo) => line.push_str(&format!(
                    "  (workspace rule, from {project} at {})",
                    repo.display()
                )),
                None => line.push_str(&format!("  (workspace rule, from {project})")),
            }
        } else if item.scope.workspace {
            line.push_str("  (widened to the workspace)");
        }
        if item.advisory {
            line.push_str("  (advisory)");
        }
        if let Some(contest) = contested_by(&item.contested_by) {
            line.push_str(&format!("  {contest}"));
        }
        if let Some(standing) = &item.standing {
            line.push_str(&format!("  · {standing}"));
        }
        if let Some(principal) = &item.signed_by {
            line.push_str(&format!("  ✓ {principal}"));
        }
        out.line(line)?;
    }
    Ok(())
}
