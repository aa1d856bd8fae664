//! The one way into the repository: discovery (worktrees, `GIT_DIR`, bare
//! repositories refused where a work tree is needed), the work tree and
//! index listing (tracked and untracked files through gix), staged blobs,
//! commit ranges and their line diffs, the `git` child processes for fetch
//! and push (gix cannot push; see [`remote`]) and for the hooks' questions
//! ([`hooks`]), and the plain walk of folders git does not list ([`walk`]). The store, the checker, the vault lock and the compiler's
//! project discovery all open the repository through [`Repo`].

pub mod hooks;
pub mod range;
pub mod remote;
pub mod sign;
pub mod walk;
mod worktree;

use std::path::{Path, PathBuf};

pub use gix::ObjectId;
pub use range::{CommitDiff, MergedRange};
pub use remote::Pushed;
pub use worktree::Blob;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{0} is not inside a git repository; run `git init` first, or pass -C <repo>")]
    NotARepository(PathBuf),
    #[error(
        "{0} is a bare repository: this command needs a work tree; run it in a clone or a `git worktree`"
    )]
    Bare(PathBuf),
    #[error("git: {context}: {source}")]
    Git {
        context: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("cannot run git {args}: {message}")]
    Command { args: String, message: String },
    #[error(
        "no answer within {} s (`git {args}` was stopped); if the remote is only slow, set a longer `timeout` under [sync] in kapi.toml or pass --timeout",
        after.as_secs()
    )]
    TimedOut {
        args: String,
        after: std::time::Duration,
    },
}

pub(crate) fn git<E: std::error::Error + Send + Sync + 'static>(
    context: &'static str,
) -> impl FnOnce(E) -> GitError {
    move |e| GitError::Git {
        context,
        source: Box::new(e),
    }
}

/// An open repository.
pub struct Repo {
    repo: gix::Repository,
}

/// The decoded objects a repository keeps for reading again: a few
/// segments and the trees above them.
const OBJECT_CACHE_BYTES: usize = 256 * 1024;

impl Repo {
    /// The repository at or above `dir`, found as git finds it: a `.git`
    /// folder, a worktree's `.git` file, or `GIT_DIR`. Bare repositories
    /// open too; [`Repo::require_work_tree`] refuses them where a command
    /// needs files.
    pub fn discover(dir: &Path) -> Result<Self, GitError> {
        // Like git, a ceiling that holds none of the way up is ignored,
        // not an error.
        let options = gix::discover::upwards::Options {
            match_ceiling_dir_or_error: false,
            ..Default::default()
        };
        let repo = gix::ThreadSafeRepository::discover_with_environment_overrides_opts(
            dir,
            options,
            Default::default(),
        )
        .map_err(|_| GitError::NotARepository(dir.to_owned()))?;
        let mut repo = repo.to_thread_local();
        // A command reads the same trees and commits again (a note: the
        // log's tip tree for the project key, the newest-id check, the
        // room check and the insert): kept decoded, a second read does
        // not inflate them again. Objects are named by their content, so
        // what the cache holds is never stale.
        repo.object_cache_size_if_unset(OBJECT_CACHE_BYTES);
        Ok(Self { repo })
    }

    /// Like [`Repo::discover`], starting from the nearest existing ancestor
    /// of `path` (which may not exist yet). `None` outside a repository.
    pub fn discover_above(path: &Path) -> Option<Self> {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let existing = absolute.ancestors().find(|d| d.is_dir())?;
        // Resolve links first: every way to the same folder finds the same
        // repository (and so the same lock).
        let existing = existing
            .canonicalize()
            .unwrap_or_else(|_| existing.to_path_buf());
        Self::discover(&existing).ok()
    }

    /// The project folder holding `dir`: the top of the work tree of the
    /// repository found by [`Repo::discover`]; where no repository opens,
    /// the nearest folder holding a `.git` entry gix cannot open (a
    /// placeholder still marks the top of a project); else `None`.
    pub fn project_root(dir: &Path) -> Option<PathBuf> {
        match Self::discover(dir) {
            Ok(repo) => repo.work_tree().map(Path::to_path_buf),
            Err(_) => dir
                .ancestors()
                .find(|d| d.join(".git").exists())
                .map(Path::to_path_buf),
        }
    }

    pub fn gix(&self) -> &gix::Repository {
        &self.repo
    }

    pub fn gix_mut(&mut self) -> &mut gix::Repository {
        &mut self.repo
    }

    /// The top of the work tree, if the repository has one.
    pub fn work_tree(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    /// The top of the work tree, or a clear refusal for a bare repository.
    pub fn require_work_tree(&self) -> Result<&Path, GitError> {
        self.work_tree()
            .ok_or_else(|| GitError::Bare(self.repo.git_dir().to_owned()))
    }

    /// This work tree's own git directory (`.git/worktrees/<name>` in a
    /// linked worktree).
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// The git directory every worktree shares: kapi's locks and caches
    /// live under `<common>/kapi/`.
    pub fn common_dir(&self) -> &Path {
        self.repo.common_dir()
    }

    /// `<common dir>/kapi`.
    pub fn kapi_dir(&self) -> PathBuf {
        self.common_dir().join("kapi")
    }

    /// The branch checked out (`main`), if HEAD names one.
    pub fn current_branch(&self) -> Option<String> {
        let name = self.repo.head_name().ok()??;
        Some(name.shorten().to_string())
    }

    /// The default branch: where `refs/remotes/origin/HEAD` points, else
    /// `init.defaultBranch`, else `main` when it exists, else `master`.
    pub fn default_branch(&self) -> String {
        if let Ok(Some(r)) = self.repo.try_find_reference("refs/remotes/origin/HEAD")
            && let gix::refs::TargetRef::Symbolic(target) = r.target()
        {
            let full = target.as_bstr().to_string();
            if let Some(branch) = full.strip_prefix("refs/remotes/origin/") {
                return branch.to_owned();
            }
        }
        if let Some(name) = self.repo.config_snapshot().string("init.defaultBranch") {
            return name.to_string();
        }
        match self.repo.try_find_reference("refs/heads/main") {
            Ok(Some(_)) => "main".into(),
            _ => "master".into(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
