//! The exit-code table (docs/exit-codes.md) and the one CLI error type.

use std::fmt;
use std::io::Write;
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
    /// Success; `check`: nothing fails; `verify-context`: current.
    Ok = 0,
    /// `check`: a finding fails; `verify-context`: stale.
    Failed = 1,
    /// Bad usage or configuration: flags, `kapi.toml`, unknown or ambiguous ids.
    Usage = 2,
    /// `verify-context`: the artifact is refused; `compile-context`: refused.
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

/// An error the CLI reports on stderr before exiting with its code.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
}

impl CliError {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self {
            exit,
            message: message.into(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }

    pub fn store(message: impl Into<String>) -> Self {
        Self::new(Exit::Store, message)
    }

    /// Print `error: ...` to stderr and turn the error into its exit code.
    /// What a message quotes (an id, a range, git's words) never steers the
    /// terminal; the lines of git's words stay lines.
    pub fn report(self) -> ExitCode {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "error: {}",
            crate::terminal::escape_lines(&self.message)
        );
        self.exit.into()
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        CliError::new(Exit::Internal, format!("I/O error: {err}"))
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
            "vault_not_found: {} is not a directory; set `[vault] root` in kapi.toml or pass --root",
            root.display()
        )),
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
