//! One file per subcommand; this module only dispatches.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::exit::{CliError, Exit};
use crate::context::{ContextError, Session};
use crate::ops::actor;
use crate::store::StoreError;

pub mod check;
pub mod compile_context;
pub mod context;
pub mod store;
pub mod vault_args;
pub mod verify_context;

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Record, read and review the project's context (rules and notes).
    Context(context::Args),
    /// Check prose against established rules; suggestions only advise.
    Check(check::Args),
    /// Compile decision records into a bounded JSON context for an agent.
    CompileContext(compile_context::Args),
    /// Say whether a compiled context is current, stale or refused.
    VerifyContext(verify_context::Args),
    /// Maintain the operation store: export, import, doctor.
    Store(store::Args),
}

/// What every command may read about where and how it runs.
#[derive(Debug)]
pub struct Ctx {
    /// The directory kapi runs in (`-C` or the process's own).
    pub cwd: PathBuf,
}

impl Ctx {
    pub fn from_env(dir: Option<&Path>) -> Result<Self, CliError> {
        let base = std::env::current_dir().map_err(|e| {
            CliError::new(
                Exit::Usage,
                format!("cannot read the current directory: {e}"),
            )
        })?;
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
        Ok(Self { cwd })
    }

    /// An environment variable, if set and valid UTF-8.
    pub fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    /// The clock in Unix milliseconds. `KAPI_NOW` (RFC 3339 or Unix
    /// milliseconds) pins it: a test facility.
    pub fn now_ms(&self) -> Result<u64, CliError> {
        match self.var("KAPI_NOW").filter(|v| !v.is_empty()) {
            Some(text) => parse_now(&text).ok_or_else(|| {
                CliError::usage(format!(
                    "KAPI_NOW={text} is neither an RFC 3339 instant nor Unix milliseconds"
                ))
            }),
            None => Ok(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)),
        }
    }

    /// Randomness for ids. `KAPI_SEED` (an integer) makes it repeatable: a
    /// test facility; ids still never sort backwards.
    pub fn random(&self) -> u128 {
        match self
            .var("KAPI_SEED")
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            Some(seed) => {
                (u128::from(splitmix(seed)) << 64) | u128::from(splitmix(seed ^ 0x9e37_79b9))
            }
            None => os_random(),
        }
    }

    /// Open the repository, read kapi.toml and name the actor.
    pub fn session(&self) -> Result<Session, CliError> {
        self.open_session().map_err(CliError::from)
    }

    /// The session of the work tree kapi runs in, or `None` outside one
    /// (or in a repository without a work tree).
    pub fn session_if_in_work_tree(&self) -> Result<Option<Session>, CliError> {
        match self.open_session() {
            Ok(s) if s.store.work_tree().is_some() => Ok(Some(s)),
            Ok(_) | Err(ContextError::Store(StoreError::NotARepository(_))) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn open_session(&self) -> Result<Session, ContextError> {
        let now = self.now_ms().map_err(|e| ContextError::Usage(e.message))?;
        let actor = |store: &crate::store::Store| {
            actor::detect(
                |name| std::env::var_os(name),
                || {
                    let config = store.repo().config_snapshot();
                    (
                        config.string("user.email").map(|v| v.to_string()),
                        config.string("user.name").map(|v| v.to_string()),
                    )
                },
            )
        };
        let mut session = Session::open(&self.cwd, actor, now, self.random())?;
        if let Some(timeout) = self.lock_timeout()? {
            session.store.set_lock_timeout(timeout);
        }
        Ok(session)
    }

    /// `KAPI_LOCK_TIMEOUT_MS`: how long a writer waits for a lock.
    fn lock_timeout(&self) -> Result<Option<std::time::Duration>, ContextError> {
        let Some(text) = self.var("KAPI_LOCK_TIMEOUT_MS") else {
            return Ok(None);
        };
        text.trim()
            .parse::<u64>()
            .map(|ms| Some(std::time::Duration::from_millis(ms)))
            .map_err(|_| {
                ContextError::Usage(format!(
                    "KAPI_LOCK_TIMEOUT_MS={text} is not a number of milliseconds"
                ))
            })
    }
}

fn parse_now(text: &str) -> Option<u64> {
    if let Ok(ms) = text.trim().parse::<u64>() {
        return Some(ms);
    }
    let t =
        time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
            .ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn os_random() -> u128 {
    use std::io::Read;
    let mut buf = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok()
    {
        return u128::from_le_bytes(buf);
    }
    // No /dev/urandom: mix the clock, the process id and std's random hash keys.
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    (u128::from(h.finish()) << 64) | u128::from(splitmix(h.finish()))
}

impl From<ContextError> for CliError {
    fn from(err: ContextError) -> Self {
        let exit = match &err {
            ContextError::Policy(_) => Exit::NotPermitted,
            ContextError::Store(StoreError::NotARepository(_)) => Exit::Usage,
            ContextError::Store(_) => Exit::Store,
            ContextError::Refused(_) => Exit::Refused,
            ContextError::Config(_)
            | ContextError::Resolve(_)
            | ContextError::Forms(_)
            | ContextError::Scope(_)
            | ContextError::Actor(_)
            | ContextError::Usage(_) => Exit::Usage,
        };
        CliError::new(exit, err.to_string())
    }
}

impl From<StoreError> for CliError {
    fn from(err: StoreError) -> Self {
        ContextError::Store(err).into()
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

/// Refresh the managed block of AGENTS.md and CLAUDE.md after what is in
/// force changed, and say which files were written.
pub(crate) fn refresh_rules_files(
    session: &Session,
    out: &mut super::output::Out,
) -> Result<(), CliError> {
    let ledger = session.ledger()?;
    let written = crate::context::rulesfiles::refresh(session, &ledger)?;
    report_rules_files(session, &written, out)
}

/// Say which rules files a refresh wrote (nothing when none).
pub(crate) fn report_rules_files(
    session: &Session,
    written: &[std::path::PathBuf],
    out: &mut super::output::Out,
) -> Result<(), CliError> {
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
    out.line(format!(
        "updated the rules in force in {}",
        names.join(", ")
    ))
}

pub fn run(command: Command, ctx: &Ctx) -> Result<Exit, CliError> {
    match command {
        Command::Context(args) => context::run(args, ctx),
        Command::Check(args) => check::run(args, ctx),
        Command::CompileContext(args) => compile_context::run(args, ctx),
        Command::VerifyContext(args) => verify_context::run(args, ctx),
        Command::Store(args) => store::run(args, ctx),
    }
}
