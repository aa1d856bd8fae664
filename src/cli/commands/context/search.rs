//! `kapi context search`

use crate::cli::commands::{Ctx, contested_by};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::Item;
use crate::context::search::search;

/// List the rules and notes that mention a text: the project's (with their
/// status) and the rules other repositories of this machine widened to the
/// workspace, marked as such.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The text to look for, in any case (`"quick cast"`).
    #[arg(value_name = "TEXT")]
    pub text: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let found = search(&session, &args.text)?;
    let mut out = Out::new();
    if args.json {
        out.json(&found)?;
        return Ok(Exit::Ok);
    }
    for item in found.rules.iter().chain(&found.notes) {
        out.line(line(item))?;
    }
    for w in &found.workspace {
        out.line(format!(
            "{} {} {} (workspace rule, from {} at {}){}",
            w.short,
            w.status.as_str(),
            w.describe(),
            w.project,
            w.repository.display(),
            if w.advisory { " (advisory)" } else { "" }
        ))?;
    }
    if found.is_empty() {
        out.line(format!("no rule or note mentions \"{}\"", found.text))?;
    }
    Ok(Exit::Ok)
}

fn line(item: &Item) -> String {
    let mut line = format!(
        "{} {} {}",
        item.short,
        item.status.as_str(),
        item.describe()
    );
    if !item.scope.point.is_empty() {
        let axes = crate::ops::scope::pairs(&item.scope.point);
        line.push_str(&format!(" [{}]", axes.join(", ")));
    }
    if item.scope.workspace {
        line.push_str(" (widened to the workspace)");
    }
    if item.advisory {
        line.push_str(" (advisory)");
    }
    if let Some(c) = contested_by(&item.contested_by) {
        line.push_str(&format!(" {c}"));
    }
    line
}
