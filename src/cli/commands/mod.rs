//! One file per subcommand; this module only dispatches.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use std::sync::Arc;

use super::exit::{CliError, Exit};
use crate::context::{Env, ProcessEnv, Session};

pub mod apply;
pub mod check;
pub mod ci;
pub mod compile_context;
pub mod completions;
pub mod context;
pub mod hook;
pub mod hooks;
pub mod man;
pub mod mcp;
pub mod store;
pub mod trust;
pub mod vault_args;
pub mod verify_claim;
pub mod verify_context;
pub mod workspace;

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Read, review and reset the project's context (rules and notes); note and log for assistants.
    Context(Deferred<context::Args>),
    /// Check prose against established rules; suggestions only advise.
    Check(Deferred<check::Args>),
    /// (For people) Apply a change set: edits of rules in force, and content edits.
    Apply(Deferred<apply::Args>),
    /// Compile decision records into a bounded JSON context for an agent.
    CompileContext(Deferred<compile_context::Args>),
    /// Say whether a compiled context is current, stale or refused.
    VerifyContext(Deferred<verify_context::Args>),
    /// Check a claim's quotes against its capture's bytes (byte anchors).
    VerifyClaim(Deferred<verify_claim::Args>),
    /// Maintain the operation store: export, import, doctor.
    Store(Deferred<store::Args>),
    /// Install, inspect and remove the git and agent hooks.
    Hooks(Deferred<hooks::Args>),
    /// The keys whose signatures vouch for decisions: add (for people), list.
    Trust(Deferred<trust::Args>),
    /// Run one hook event (what the installed hooks call).
    Hook(Deferred<hook::Args>),
    /// List the repositories kapi knows on this machine; a person chooses which share their rules.
    Workspace(Deferred<workspace::Args>),
    /// Serve the context tools to a coding agent over stdio (MCP); it names the agent.
    Mcp(Deferred<mcp::Args>),
    /// Steps for a CI job: after-push records merge signals and syncs.
    Ci(Deferred<ci::Args>),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(Deferred<completions::Args>),
    /// Write the manual pages (`--install`: where `man` and `git kapi --help` find them).
    Man(Deferred<man::Args>),
}

/// A subcommand's arguments, declared to clap only when the command line
/// names that subcommand: clap builds every argument of every subcommand
/// before it parses (a fifth of a `kapi context note`'s instructions and
/// the code pages it faults in), and a process runs one subcommand. Help,
/// completions and manual pages build the whole tree as before.
#[derive(Debug)]
pub struct Deferred<T>(pub T);

impl<T: clap::Args> clap::Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        if WHOLE_TREE.load(std::sync::atomic::Ordering::Relaxed) {
            return T::augment_args(cmd);
        }
        cmd.defer(|cmd| keeping_about(cmd, T::augment_args))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        if WHOLE_TREE.load(std::sync::atomic::Ordering::Relaxed) {
            return T::augment_args_for_update(cmd);
        }
        cmd.defer(|cmd| keeping_about(cmd, T::augment_args_for_update))
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// Set once a command needs the whole tree at once: clap derives `help`'s
/// own subcommands (`kapi help context note`) from the tree as it stands
/// when the root is built, before a deferred subcommand has declared its
/// own, so completion scripts would lose them.
static WHOLE_TREE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The command tree with every subcommand's arguments declared up front:
/// for completion scripts and manual pages.
pub(crate) fn whole_tree() -> clap::Command {
    use clap::CommandFactory;
    WHOLE_TREE.store(true, std::sync::atomic::Ordering::Relaxed);
    super::Cli::command()
}

/// Declare the arguments, keeping the about the subcommand's variant gave:
/// undeferred, the variant's doc comment was applied after the arguments
/// struct's own and won; deferred, the struct's would come last.
fn keeping_about(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
    use clap::builder::Resettable;
    let reset = |text: Option<&clap::builder::StyledStr>| match text {
        Some(text) => Resettable::Value(text.clone()),
        None => Resettable::Reset,
    };
    let (about, long_about) = (reset(cmd.get_about()), reset(cmd.get_long_about()));
    augment(cmd).about(about).long_about(long_about)
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Self)
    }

    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Self)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(
        &mut self,
        matches: &mut clap::ArgMatches,
    ) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

/// What every command may read about where and how it runs.
pub struct Ctx {
    /// The directory kapi runs in (`-C` or the process's own).
    pub cwd: PathBuf,
    /// The clock, randomness and variables (the process's own).
    pub env: Arc<dyn Env>,
}

impl Ctx {
    pub fn from_env(dir: Option<&Path>) -> Result<Self, CliError> {
        let base = std::env::current_dir()
            .map_err(|e| CliError::io("cannot read the current directory", &e))?;
        let cwd = match dir {
            Some(d) => base.join(d),
            None => base,
        };
        if !cwd.is_dir() {
            return Err(CliError::usage(format!(
                "{} is not a directory",
                cwd.display()
            )));
        }
        let env = Arc::new(ProcessEnv::for_one_command());
        Ok(Self { cwd, env })
    }

    /// Open the repository, read kapi.toml and name the actor.
    pub fn session(&self) -> Result<Session, CliError> {
        Ok(Session::open(Arc::clone(&self.env), &self.cwd)?)
    }

    /// The session of the work tree kapi runs in, or `None` outside one
    /// (or in a repository without a work tree).
    pub fn session_if_in_work_tree(&self) -> Result<Option<Session>, CliError> {
        Ok(Session::open_in_work_tree(
            Arc::clone(&self.env),
            &self.cwd,
        )?)
    }
}

/// `[contested by #0tt2jbffx7, #0tt2jbh1t6]`, or `None` when uncontested.
pub(crate) fn contested_by(ids: &[crate::ops::OpId]) -> Option<String> {
    if ids.is_empty() {
        return None;
    }
    let names: Vec<String> = ids.iter().map(|c| format!("#{}", c.short())).collect();
    Some(format!("[contested by {}]", names.join(", ")))
}

/// Imported rules that disagree, as `kapi store import` and `kapi context
/// review` name them: `styles/A.yml: "GitHub", not "Github" and styles/B.yml: "Github", not "GitHub"`.
pub(crate) fn disagreement(d: &crate::context::Disagreement) -> String {
    let side = |r: &crate::context::DisagreeingRule| match &r.file {
        Some(file) => format!("{file}: {}", r.rule),
        None => format!("#{}: {}", r.id.short(), r.rule),
    };
    format!("{} and {}", side(&d.first), side(&d.second))
}

/// Say which rules files a refresh wrote (nothing when none).
pub(crate) fn report_rules_files(
    session: &Session,
    written: &[std::path::PathBuf],
    failed: Option<crate::context::ContextError>,
    out: &mut super::output::Out,
) -> Result<(), CliError> {
    // What was recorded stands and was shown; a failed refresh is the error.
    if let Some(e) = failed {
        out.flush()?;
        return Err(e.into());
    }
    if written.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = written
        .iter()
        .map(|p| {
            p.strip_prefix(&session.root)
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect();
    out.note(format!(
        "updated the rules in force in {}",
        names.join(", ")
    ))
}

pub fn run(command: Command, ctx: &Ctx) -> Result<Exit, CliError> {
    match command {
        Command::Context(Deferred(args)) => context::run(args, ctx),
        Command::Check(Deferred(args)) => check::run(args, ctx),
        Command::Apply(Deferred(args)) => apply::run(args, ctx),
        Command::CompileContext(Deferred(args)) => compile_context::run(args, ctx),
        Command::VerifyContext(Deferred(args)) => verify_context::run(args, ctx),
        Command::VerifyClaim(Deferred(args)) => verify_claim::run(args, ctx),
        Command::Store(Deferred(args)) => store::run(args, ctx),
        Command::Hooks(Deferred(args)) => hooks::run(args, ctx),
        Command::Trust(Deferred(args)) => trust::run(args, ctx),
        Command::Hook(Deferred(args)) => hook::run(args, ctx),
        Command::Workspace(Deferred(args)) => workspace::run(args, ctx),
        Command::Mcp(Deferred(args)) => mcp::run(args, ctx),
        Command::Ci(Deferred(args)) => ci::run(args, ctx),
        Command::Completions(Deferred(args)) => completions::run(args, ctx),
        Command::Man(Deferred(args)) => man::run(args, ctx),
    }
}

/// `--as-of WHEN`: an RFC 3339 instant, or a date meaning the end of that
/// day (UTC), as Unix milliseconds.
pub(crate) fn parse_as_of(text: &str) -> Result<u64, String> {
    crate::ops::scope::parse_as_of(text).map_err(|e| e.to_string())
}
