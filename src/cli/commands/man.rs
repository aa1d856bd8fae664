//! `kapi man`: manual pages for kapi and every command, from the command
//! definition the parser uses, so `man kapi-check` and `git kapi --help`
//! (git opens the page `git-kapi`) work once they are installed.

use std::path::{Path, PathBuf};

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;

/// Write the manual pages: `kapi.1`, `git-kapi.1` (what `git kapi --help`
/// opens), and one per command (`kapi-check.1`, `kapi-context-review.1`, …).
///
/// `--install` writes them where `man` finds them for this user
/// (`$XDG_DATA_HOME/man/man1`, else `~/.local/share/man/man1`); `--out DIR`
/// into DIR. With neither, `kapi.1` is printed.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Install the pages for this user (`~/.local/share/man/man1`).
    #[arg(long, conflicts_with = "out")]
    pub install: bool,

    /// Write the pages into this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let dir = match (args.install, args.out) {
        (true, _) => user_man_dir(ctx)?,
        (false, Some(dir)) => ctx.cwd.join(dir),
        (false, None) => {
            let mut page = Vec::new();
            render(&super::whole_tree(), &mut page)?;
            let mut out = Out::new();
            out.raw(&page)?;
            out.flush()?;
            return Ok(Exit::Ok);
        }
    };
    let written = write_pages(&dir)?;
    let mut out = Out::new();
    out.line(format!("wrote {written} manual pages to {}", dir.display()))?;
    if args.install {
        out.line("`man kapi`, `man kapi-check` and `git kapi --help` read them (man finds ~/.local/share/man when ~/.local/bin is on PATH; else add it to MANPATH)")?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// `$XDG_DATA_HOME/man/man1`, else `$HOME/.local/share/man/man1`.
fn user_man_dir(ctx: &Ctx) -> Result<PathBuf, CliError> {
    let data = ctx
        .env
        .var("XDG_DATA_HOME")
        .filter(|d| Path::new(d).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            ctx.env
                .var("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| Path::new(&h).join(".local/share"))
        })
        .ok_or_else(|| {
            CliError::usage("neither XDG_DATA_HOME nor HOME is set: give the folder with --out DIR")
        })?;
    Ok(data.join("man").join("man1"))
}

/// One page per command, named by its path (`kapi-context-review`), and
/// `git-kapi` beside `kapi`; returns how many were written.
fn write_pages(dir: &Path) -> Result<usize, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::io(format!("cannot create {}", dir.display()), &e))?;
    let root = super::whole_tree();
    let mut pages: Vec<(String, clap::Command)> = Vec::new();
    collect(&root, "kapi", &mut pages);
    pages.push((
        "git-kapi".into(),
        root.clone().name("git-kapi").bin_name("git kapi"),
    ));
    for (name, command) in &pages {
        let mut page = Vec::new();
        render(command, &mut page)?;
        let path = dir.join(format!("{name}.1"));
        crate::atomic::replace(&path, &page, None)
            .map_err(|e| CliError::io(format!("cannot write {}", path.display()), &e))?;
    }
    Ok(pages.len())
}

/// `command` and every command under it, each named by its path.
fn collect(command: &clap::Command, name: &str, pages: &mut Vec<(String, clap::Command)>) {
    let mut command = command.clone().name(name.to_owned());
    command.build();
    pages.push((name.to_owned(), command.clone()));
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        collect(sub, &format!("{name}-{}", sub.get_name()), pages);
    }
}

fn render(command: &clap::Command, out: &mut Vec<u8>) -> Result<(), CliError> {
    clap_mangen::Man::new(command.clone())
        .render(out)
        .map_err(|e| CliError::io("cannot render a manual page", &e))
}
