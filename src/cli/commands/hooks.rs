//! `kapi hooks install|status|uninstall`

use clap::Subcommand;

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::hooks::{Action, Change, Hooks, State, Target};

/// Install the git and agent hooks, say what is installed, remove them.
///
/// Git hooks (pre-commit, post-merge) go where `git rev-parse --git-path
/// hooks` says, so `core.hooksPath` and linked worktrees are respected; a
/// hook already there is kept as `<hook>.pre-kapi` and runs first. Claude
/// Code's hooks (SessionStart, PostToolUse for edits, Stop) go in
/// `.claude/settings.json` (and `kapi mcp` in `.mcp.json`), Codex's Stop
/// hook in `.codex/hooks.json` (and `kapi mcp` in `.codex/config.toml`).
/// Reinstalling changes nothing; uninstall removes exactly what install
/// added. See docs/hooks.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: HooksCommand,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Install the hooks (without --git, --claude or --codex: git and Claude Code).
    Install(InstallArgs),
    /// Say what is installed where, and what is foreign.
    Status,
    /// Remove exactly what install added and put back what was there.
    Uninstall(Which),
}

#[derive(Debug, clap::Args)]
pub struct Which {
    /// The git hooks: pre-commit and post-merge.
    #[arg(long)]
    pub git: bool,
    /// Claude Code's hooks in .claude/settings.json.
    #[arg(long)]
    pub claude: bool,
    /// Codex's Stop hook in .codex/hooks.json, and kapi mcp in .codex/config.toml.
    #[arg(long)]
    pub codex: bool,
    /// Print what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl Which {
    fn targets(&self, none: &[Target]) -> Vec<Target> {
        let chosen: Vec<Target> = [
            (self.git, Target::Git),
            (self.claude, Target::Claude),
            (self.codex, Target::Codex),
        ]
        .into_iter()
        .filter_map(|(on, t)| on.then_some(t))
        .collect();
        if chosen.is_empty() {
            none.to_vec()
        } else {
            chosen
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub which: Which,
    /// With Claude Code: create CLAUDE.md importing AGENTS.md (`@AGENTS.md`) when it is missing.
    #[arg(long)]
    pub claude_md: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let hooks = Hooks::open(&ctx.cwd)?;
    let mut out = Out::new();
    match args.command {
        HooksCommand::Install(a) => {
            let targets = a.which.targets(&Target::DEFAULT);
            let mut changes = hooks.install(&targets, a.which.dry_run)?;
            let claude = targets.contains(&Target::Claude);
            if claude && a.claude_md {
                changes.extend(hooks.create_claude_md(a.which.dry_run)?);
            }
            report(&hooks, &changes, a.which.dry_run, &mut out)?;
            if claude && !a.claude_md && hooks.claude_md().is_none() {
                out.line(
                    "CLAUDE.md is missing, and Claude Code does not read AGENTS.md: \
                     `kapi hooks install --claude --claude-md` creates one that imports it",
                )?;
            }
        }
        HooksCommand::Uninstall(w) => {
            let targets = w.targets(&[Target::Git, Target::Claude, Target::Codex]);
            let changes = hooks.uninstall(&targets, w.dry_run)?;
            report(&hooks, &changes, w.dry_run, &mut out)?;
        }
        HooksCommand::Status => {
            let mut unreadable = false;
            for s in hooks.status()? {
                let state = match &s.state {
                    State::Installed { chained: None } => "installed".to_owned(),
                    State::Installed { chained: Some(k) } => format!(
                        "installed, runs the foreign hook kept as {} first",
                        name(&hooks, k)
                    ),
                    State::Outdated => {
                        "installed by another kapi version: run `kapi hooks install`".to_owned()
                    }
                    State::Foreign => "foreign (not kapi's)".to_owned(),
                    State::Absent => "not installed".to_owned(),
                    State::Unreadable(why) => {
                        unreadable = true;
                        format!("unreadable: {why}")
                    }
                };
                out.line(format!(
                    "{:<6} {:<12} {}: {state}",
                    s.target.as_str(),
                    s.hook,
                    name(&hooks, &s.path)
                ))?;
            }
            // Every line is printed; a file kapi cannot read fails the status.
            if unreadable {
                out.flush()?;
                return Ok(Exit::Usage);
            }
        }
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// A path relative to the work tree when it is inside it.
fn name(hooks: &Hooks, path: &std::path::Path) -> String {
    path.strip_prefix(hooks.root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn report(hooks: &Hooks, changes: &[Change], dry_run: bool, out: &mut Out) -> Result<(), CliError> {
    let would = if dry_run { "would be " } else { "" };
    for c in changes {
        let what = match &c.action {
            Action::Installed => format!("{would}installed"),
            Action::Chained { kept } => format!(
                "{would}installed; the hook that was there {would}kept as {} and runs first",
                name(hooks, kept)
            ),
            Action::Updated => format!("{would}updated"),
            Action::Unchanged => "already installed".to_owned(),
            Action::Removed => format!("{would}removed"),
            Action::Restored { from } => format!(
                "{would}removed; the hook kept as {} {would}put back",
                name(hooks, from)
            ),
            Action::Foreign => "not kapi's: left alone".to_owned(),
            Action::Absent => "not installed".to_owned(),
            Action::Created => format!("{would}created"),
        };
        out.line(format!(
            "{:<6} {:<12} {}: {what}",
            c.target.as_str(),
            c.hook,
            name(hooks, &c.path)
        ))?;
    }
    Ok(())
}
