//! The exit-code table (docs/exit-codes.md) and the one CLI error type.

use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use crate::check::files::FilesError;
use crate::compile::artifacts::ArtifactError;
use crate::compile::{CompileError, VerifyStatus};
use crate::context::check::CheckError;
use crate::context::transfer::WriteError;
use crate::context::{ContextError, EnvError};
use crate::store::StoreError;

/// Every code kapi exits with. Findings are not errors: a failing check and a
/// stale artifact have codes of their own, distinct from bad usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success; `check`: nothing fails; `verify-context`: current;
    /// `verify-claim`: verified.
    Ok = 0,
    /// `check`: a finding fails; `verify-context`: stale; `verify-claim`:
    /// a quote does not match its capture.
    Failed = 1,
    /// Bad usage or configuration: flags, `kapi.toml`, unknown or ambiguous ids.
    Usage = 2,
    /// `verify-context`: the artifact is refused; `compile-context`: refused;
    /// `verify-claim`: not found, ambiguous or withheld.
    Refused = 3,
    /// The policy refused the operation (only a person may do this).
    NotPermitted = 4,
    /// The store or the repository could not be read or written.
    Store = 5,
    /// A remote could not be reached, refused refs/kapi/ops, or kept moving.
    Remote = 6,
    /// A bug in kapi.
    Internal = 70,
}

impl Exit {
    /// 1 when something fails (a finding, a fix left to make, a doctor's
    /// diagnosis), else 0.
    pub fn failed_if(failed: bool) -> Exit {
        if failed { Exit::Failed } else { Exit::Ok }
    }
}

/// A verdict's code: current 0, stale 1, refused 3.
impl From<VerifyStatus> for Exit {
    fn from(status: VerifyStatus) -> Self {
        match status {
            VerifyStatus::Current => Exit::Ok,
            VerifyStatus::Stale => Exit::Failed,
            VerifyStatus::Refused => Exit::Refused,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// An error the CLI reports on stderr before exiting with its code: what
/// was wrong, and where it helps, what to do about it (a hint).
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
    /// What to do, said on a line of its own after the message (`hint:
    /// …`), as git and cargo say it.
    pub hint: Option<String>,
}

impl CliError {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self {
            exit,
            message: message.into(),
            hint: None,
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }

    pub fn store(message: impl Into<String>) -> Self {
        Self::new(Exit::Store, message)
    }

    /// The same error, with what to do about it.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// An I/O error met while doing `what` (`cannot read notes.jsonl`),
    /// with the code its kind has in the table ([`io_exit`]).
    pub fn io(what: impl fmt::Display, err: &io::Error) -> Self {
        Self::new(io_exit(err.kind()), format!("{what}: {err}"))
    }

    /// The lines stderr gets: `error: …`, then `hint: …` if there is one
    /// (not yet escaped: see [`CliError::report`]).
    pub fn render(&self) -> String {
        match &self.hint {
            Some(hint) => format!("error: {}\nhint: {hint}", self.message),
            None => format!("error: {}", self.message),
        }
    }

    /// Print the error to stderr and turn it into its exit code. What a
    /// message quotes (an id, a range, git's words) never steers the
    /// terminal; the lines of git's words stay lines. An error whose code
    /// is success (a reader that went away: a broken pipe) is not printed.
    ///
    /// Under `-q` the hint is left out (the error stays); `error:` and
    /// `hint:` are in colour where stderr takes it.
    pub fn report(mut self) -> ExitCode {
        if self.exit != Exit::Ok {
            let settings = super::global::Settings::get();
            if settings.quiet {
                self.hint = None;
            }
            let label = |name| super::global::label(name, settings.stderr_styled);
            let mut text = format!(
                "{}: {}",
                label("error"),
                crate::terminal::escape_lines(&self.message)
            );
            if let Some(hint) = &self.hint {
                let hint = crate::terminal::escape_lines(hint);
                text.push_str(&format!("\n{}: {hint}", label("hint")));
            }
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
        }
        self.exit.into()
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The code of an I/O error the command line meets itself (reading stdin
/// or a file it was named, writing output), by its kind. None is a bug in
/// kapi: a reader that went away is success (`kapi context log | head`); a
/// file that is not there, is not kapi's to read, or is no file of the
/// kind asked for is bad usage; anything else (a full disk, a device
/// error) is a store's failure to read or write.
pub fn io_exit(kind: io::ErrorKind) -> Exit {
    use io::ErrorKind as K;
    match kind {
        K::BrokenPipe => Exit::Ok,
        K::NotFound
        | K::PermissionDenied
        | K::IsADirectory
        | K::NotADirectory
        | K::InvalidInput
        | K::InvalidData
        | K::InvalidFilename => Exit::Usage,
        _ => Exit::Store,
    }
}

impl From<io::Error> for CliError {
    fn from(err: io::Error) -> Self {
        CliError::io("I/O error", &err)
    }
}

// The one table from library errors to exit codes. Every library error the
// command line meets is converted here, and only here.

impl From<ContextError> for CliError {
    fn from(err: ContextError) -> Self {
        let exit = match &err {
            ContextError::Policy(_) => Exit::NotPermitted,
            // Input kapi refuses at the door (an operation over a
            // documented limit, a clock pinned ahead) is bad input.
            ContextError::Store(
                StoreError::NotARepository(_)
                | StoreError::Invalid(_)
                | StoreError::AheadOfClock { .. },
            ) => Exit::Usage,
            ContextError::Store(_) => Exit::Store,
            ContextError::Refused(_) => Exit::Refused,
            ContextError::Config(_)
            | ContextError::Resolve(_)
            | ContextError::Forms(_)
            | ContextError::Scope(_)
            | ContextError::Actor(_)
            | ContextError::Env(_)
            | ContextError::Points(_)
            | ContextError::Axes(_)
            | ContextError::RulesFile(_)
            | ContextError::Usage(_) => Exit::Usage,
        };
        CliError::new(exit, err.to_string())
    }
}

impl From<crate::context::sync::SyncError> for CliError {
    fn from(err: crate::context::sync::SyncError) -> Self {
        use crate::context::sync::SyncError;
        match err {
            SyncError::Context(e) => e.into(),
            SyncError::Remote(crate::store::RemoteError::BadRemote(r), _) => CliError::usage(
                format!("`{r}` is not a remote name or URL kapi can fetch from"),
            ),
            e @ (SyncError::Remote(..)
            | SyncError::RefusedRef { .. }
            | SyncError::GaveUp { .. }
            | SyncError::OtherProject { .. }) => CliError::new(Exit::Remote, e.to_string()),
        }
    }
}

impl From<crate::context::workspace::WorkspaceError> for CliError {
    fn from(err: crate::context::workspace::WorkspaceError) -> Self {
        use crate::context::workspace::{RegistryError, WorkspaceError};
        let exit = match &err {
            WorkspaceError::Policy(_) => Exit::NotPermitted,
            WorkspaceError::Registry(
                RegistryError::Unreadable { .. }
                | RegistryError::Write { .. }
                | RegistryError::Busy { .. },
            ) => Exit::Store,
            WorkspaceError::Registry(RegistryError::NoDataDir)
            | WorkspaceError::Actor(_)
            | WorkspaceError::NotACheckout(_)
            | WorkspaceError::NotRegistered(_) => Exit::Usage,
        };
        CliError::new(exit, err.to_string())
    }
}

/// A repository that is not there or has no work tree is bad usage; git
/// failing to read or write is the store's code.
fn git_exit(err: &crate::git::GitError) -> Exit {
    use crate::git::GitError;
    match err {
        GitError::NotARepository(_) | GitError::Bare(_) => Exit::Usage,
        GitError::Git { .. } | GitError::Command { .. } | GitError::TimedOut { .. } => Exit::Store,
    }
}

impl From<crate::git::GitError> for CliError {
    fn from(err: crate::git::GitError) -> Self {
        CliError::new(git_exit(&err), err.to_string())
    }
}

impl From<crate::hooks::HooksError> for CliError {
    fn from(err: crate::hooks::HooksError) -> Self {
        use crate::hooks::HooksError;
        let exit = match &err {
            HooksError::Git(e) => git_exit(e),
            HooksError::Settings { .. }
            | HooksError::CodexConfig { .. }
            | HooksError::Crowded { .. }
            | HooksError::Unreadable { .. } => Exit::Usage,
            HooksError::Io { .. } => Exit::Store,
        };
        CliError::new(exit, err.to_string())
    }
}

impl From<crate::context::hook::HookError> for CliError {
    fn from(err: crate::context::hook::HookError) -> Self {
        use crate::context::hook::HookError;
        match err {
            HookError::Context(e) => e.into(),
            HookError::Check(e) => e.into(),
            HookError::Artifact(e) => e.into(),
            HookError::Git(e) => e.into(),
            e @ HookError::Input(_) => CliError::usage(e.to_string()),
        }
    }
}

impl From<crate::config::ConfigError> for CliError {
    fn from(err: crate::config::ConfigError) -> Self {
        ContextError::Config(err).into()
    }
}

impl From<crate::compile::RequestError> for CliError {
    fn from(err: crate::compile::RequestError) -> Self {
        use crate::compile::RequestError;
        match err {
            RequestError::Config(e) => e.into(),
            e @ (RequestError::Today(_)
            | RequestError::Clock(_)
            | RequestError::OutOfRange(_)
            | RequestError::Grant(_)
            | RequestError::Ranking(_)) => CliError::usage(e.to_string()),
        }
    }
}

impl From<crate::compile::artifacts::GrantError> for CliError {
    fn from(err: crate::compile::artifacts::GrantError) -> Self {
        CliError::usage(err.to_string())
    }
}

impl From<StoreError> for CliError {
    fn from(err: StoreError) -> Self {
        ContextError::Store(err).into()
    }
}

impl From<EnvError> for CliError {
    fn from(err: EnvError) -> Self {
        ContextError::Env(err).into()
    }
}

impl From<FilesError> for CliError {
    fn from(err: FilesError) -> Self {
        let exit = match &err {
            FilesError::Git { .. } => Exit::Store,
            FilesError::Glob { .. } | FilesError::Missing(_) => Exit::Usage,
        };
        CliError::new(exit, err.to_string())
    }
}

impl From<CheckError> for CliError {
    fn from(err: CheckError) -> Self {
        match err {
            CheckError::Context(e) => e.into(),
            CheckError::Files(e) => e.into(),
            e @ CheckError::Matcher(_) => CliError::new(Exit::Internal, e.to_string()),
            e @ CheckError::Root { .. } => CliError::store(e.to_string()),
            e @ (CheckError::TermList { .. }
            | CheckError::TermListSyntax { .. }
            | CheckError::Points(_)
            | CheckError::Usage(_)) => CliError::usage(e.to_string()),
        }
    }
}

impl From<WriteError> for CliError {
    fn from(err: WriteError) -> Self {
        match err {
            e @ (WriteError::Link(_) | WriteError::Directory(_)) => CliError::usage(e.to_string()),
            e @ WriteError::Io { .. } => CliError::store(e.to_string()),
        }
    }
}

/// The CLI error for a compile error over the vault at `root`. The vault
/// root is the caller's own path, so naming it leaks nothing; vault files
/// are never named.
pub(crate) fn compile_error(err: CompileError, root: &Path) -> CliError {
    match err {
        // Where the vault is, is configuration: a usage error, not a store's.
        CompileError::Vault(crate::vault::VaultError::NotFound) => CliError::usage(format!(
            "vault_not_found: {} is not a directory",
            root.display()
        ))
        .with_hint("set `[vault] root` in kapi.toml or pass --root"),
        // A permitted claim or its source is malformed: the caller's own
        // data, named so it can be fixed.
        CompileError::Vault(crate::vault::VaultError::Claim(e)) => CliError::usage(e.to_string())
            .with_hint("fix the claim, its capture or its ledger (docs/vault.md, \"Claims\")"),
        CompileError::Vault(e) => CliError::store(e.to_string()),
        e @ (CompileError::Rank(_) | CompileError::ViewMismatch) => {
            CliError::new(Exit::Internal, e.to_string())
        }
        e => CliError::usage(e.to_string()),
    }
}

impl From<ArtifactError> for CliError {
    fn from(err: ArtifactError) -> Self {
        match err {
            ArtifactError::Compile { root, source } => compile_error(source, &root),
            e @ (ArtifactError::Lock { .. } | ArtifactError::Write { .. }) => {
                CliError::store(e.to_string())
            }
            e @ (ArtifactError::NoneDeclared
            | ArtifactError::Entry { .. }
            | ArtifactError::Read { .. }) => CliError::usage(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_take_their_code_from_their_kind() {
        use io::ErrorKind as K;
        assert_eq!(io_exit(K::BrokenPipe), Exit::Ok);
        for kind in [
            K::NotFound,
            K::PermissionDenied,
            K::IsADirectory,
            K::InvalidData,
        ] {
            assert_eq!(io_exit(kind), Exit::Usage, "{kind:?}");
        }
        for kind in [K::StorageFull, K::WriteZero, K::Interrupted, K::Other] {
            assert_eq!(io_exit(kind), Exit::Store, "{kind:?}");
        }
        let e = CliError::io("cannot read x", &io::Error::from(K::NotFound));
        assert_eq!(e.exit, Exit::Usage);
        assert!(e.message.starts_with("cannot read x: "), "{}", e.message);
    }

    #[test]
    fn a_hint_follows_the_message_on_its_own_line() {
        let e = CliError::usage("nothing to record");
        assert_eq!(e.render(), "error: nothing to record");
        let e = e.with_hint("say what");
        assert_eq!(e.render(), "error: nothing to record\nhint: say what");
        assert_eq!(e.to_string(), "nothing to record");
    }
}
