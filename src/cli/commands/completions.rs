//! `kapi completions <shell>`: the shell's completion script, from the
//! command definition the parser uses.

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;

/// Print the completion script for a shell.
///
/// bash: `source <(kapi completions bash)` (or write it to
/// `~/.local/share/bash-completion/completions/kapi`); zsh: write it as
/// `_kapi` into a folder of `$fpath`; fish: `kapi completions fish >
/// ~/.config/fish/completions/kapi.fish`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(args: Args, _ctx: &Ctx) -> Result<Exit, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut super::whole_tree(), "kapi", &mut script);
    let mut out = Out::new();
    out.raw(&script)?;
    out.flush()?;
    Ok(Exit::Ok)
}
