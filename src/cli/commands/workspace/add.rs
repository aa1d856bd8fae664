//! `kapi workspace add`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::Session;
use crate::context::workspace::add;

/// (for people) Share a checkout's workspace rules: the rules its log
/// widens to the workspace (`kapi context review --widen-to workspace`)
/// then hold in every other repository on this machine. Only a person
/// chooses this; an agent or a tool is refused (exit 4). Whatever the log
/// holds then counts, including what a sync or an import brings into it
/// later: add only repositories whose log you trust.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkout (any folder in its work tree); default: where kapi runs.
    #[arg(value_name = "PATH")]
    pub path: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = match &args.path {
        Some(p) => Session::open(std::sync::Arc::clone(&ctx.env), &ctx.cwd.join(p))?,
        None => ctx.session()?,
    };
    let added = add(&session)?;
    let mut out = Out::new();
    if args.json {
        out.json(&added)?;
    } else if added.already {
        out.line(format!(
            "{} ({}) already shares its workspace rules",
            added.path.display(),
            added.project
        ))?;
    } else {
        out.line(format!(
            "{} ({}) now shares its workspace rules with every repository on this machine",
            added.path.display(),
            added.project
        ))?;
    }
    Ok(Exit::Ok)
}
