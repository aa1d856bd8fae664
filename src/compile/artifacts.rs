//! Declared artifacts (`[[compile]]` in `kapi.toml`), the cooperating
//! advisory lock and atomic writes.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::config::CompileEntry;
use crate::vault::{Grant, Sensitivity};

pub use super::declared::{
    ArtifactCompiled, ArtifactError, ArtifactVerified, compile_declared, compile_entry,
    verify_bytes, verify_declared, verify_entry, verify_file,
};
use super::{CompileError, Ranking, Recipe};

/// The advisory lock file of a vault outside a git repository. Scanning
/// skips it (hidden).
pub const LOCK_FILE: &str = ".kapi-lock";

/// Where the vault's cooperating lock lives: `kapi/vault.lock` in the
/// common git directory of the enclosing repository, found as the store
/// finds it (so every worktree of a repository shares one lock, beside the
/// store's), else `<vault>/.kapi-lock`.
pub fn lock_path(root: &Path) -> PathBuf {
    match crate::git::Repo::discover_above(root) {
        Some(repo) => repo.kapi_dir().join("vault.lock"),
        None => root.join(LOCK_FILE),
    }
}

fn open_lock(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Hold the vault's shared (read) lock while verifying. Verification is
/// read-only: the lock file is opened, never created. `None` when it does
/// not exist (no writer has ever held it, and a writer creates it before
/// locking) or cannot be opened; verification then proceeds without it.
/// Editors that ignore advisory locks are outside this guarantee.
pub fn lock_shared(root: &Path) -> Option<File> {
    let file = File::open(lock_path(root)).ok()?;
    file.lock_shared().ok()?;
    Some(file)
}

/// Hold the vault's exclusive lock while regenerating artifacts.
pub fn lock_exclusive(root: &Path) -> std::io::Result<File> {
    let file = open_lock(&lock_path(root))?;
    file.lock()?;
    Ok(file)
}

/// Write `bytes` to `path` whole or not at all (`crate::atomic`), creating
/// its folder if need be.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    crate::atomic::replace(path, bytes, None)
}

/// A `[[compile]]` entry made ready: where it goes and how it is compiled.
#[derive(Debug, Clone)]
pub struct Declared {
    pub output: PathBuf,
    pub root: PathBuf,
    pub recipe: Recipe,
    pub grant: Grant,
    /// The evaluation day the entry pins, if it pins one.
    pub today: Option<time::Date>,
}

/// Why a `[[compile]]` entry cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DeclaredError {
    #[error(transparent)]
    Recipe(#[from] CompileError),
    #[error(transparent)]
    Grant(#[from] GrantError),
    #[error("today = {0:?} is not a YYYY-MM-DD date")]
    Today(String),
}

/// Why a grant cannot be made from the labels given.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error("give either max_sensitivity or allow, not both")]
    Both,
    #[error("unknown sensitivity label `{0}`")]
    Unknown(String),
    #[error("unknown sensitivity label `{0}` (labels: public, internal, confidential, restricted)")]
    UnknownInList(String),
}

/// Resolve a `[[compile]]` entry relative to the project directory.
pub fn declared(
    project: &Path,
    default_root: &Path,
    entry: &CompileEntry,
) -> Result<Declared, DeclaredError> {
    let ranking = match entry.ranking.as_deref() {
        None => Ranking::Substring,
        Some(r) => Ranking::requested(r)?,
    };
    let defaults = Recipe::default();
    let recipe = Recipe {
        targets: entry.targets.clone(),
        query: entry.query.clone(),
        ranking,
        max_docs: entry.max_docs.unwrap_or(defaults.max_docs),
        max_bytes: entry.max_bytes.unwrap_or(defaults.max_bytes),
        agent: entry.agent.clone(),
    };
    recipe.validate()?;
    let grant = grant_from(entry.max_sensitivity.as_deref(), entry.allow.as_deref())?;
    let root = project.join(entry.root.as_deref().unwrap_or(default_root));
    let today = entry
        .today
        .as_deref()
        .map(|t| crate::vault::date::parse(t).ok_or_else(|| DeclaredError::Today(t.to_owned())))
        .transpose()?;
    Ok(Declared {
        output: project.join(&entry.output),
        root,
        recipe,
        grant,
        today,
    })
}

/// The grant from `max_sensitivity` or an exact `allow` list; public by default.
pub fn grant_from(max: Option<&str>, allow: Option<&[String]>) -> Result<Grant, GrantError> {
    match (max, allow) {
        (Some(_), Some(_)) => Err(GrantError::Both),
        (Some(m), None) => Sensitivity::parse(m)
            .map(Grant::up_to)
            .ok_or_else(|| GrantError::Unknown(m.to_owned())),
        (None, Some(list)) => Grant::parse_list(&list.join(",")).map_err(GrantError::UnknownInList),
        (None, None) => Ok(Grant::public()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_lives_in_the_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let vault = base.join("repo/decisions");
        std::fs::create_dir_all(&vault).unwrap();
        assert_eq!(lock_path(&vault), vault.join(LOCK_FILE));
        let repo = base.join("repo");
        crate::git::tests::sh(&repo, &["init", "-q", "-b", "main"]);
        // The lock's folder may not exist yet: compare the git directory.
        let canonical = |p: PathBuf| {
            assert!(p.ends_with("kapi/vault.lock"), "{}", p.display());
            std::fs::canonicalize(p.parent().unwrap().parent().unwrap())
                .unwrap()
                .join("kapi/vault.lock")
        };
        assert_eq!(
            canonical(lock_path(&vault)),
            base.join("repo/.git/kapi/vault.lock")
        );
        // A linked worktree's vault locks in the common git directory, where
        // the store's lock is, not in the worktree's private one.
        std::fs::write(repo.join("kapi.toml"), "").unwrap();
        crate::git::tests::sh(&repo, &["add", "kapi.toml"]);
        crate::git::tests::sh(&repo, &["commit", "-q", "-m", "one"]);
        crate::git::tests::sh(&repo, &["worktree", "add", "-q", "../linked"]);
        let linked_vault = base.join("linked/decisions");
        assert_eq!(
            canonical(lock_path(&linked_vault)),
            base.join("repo/.git/kapi/vault.lock")
        );
        // Reading never creates the lock file; writing does.
        assert!(lock_shared(&vault).is_none());
        assert!(!base.join("repo/.git/kapi").exists());
        let held = lock_exclusive(&vault).unwrap();
        drop(held);
        assert!(lock_shared(&vault).is_some());
    }

    #[test]
    fn writes_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b.json");
        write_atomic(&out, b"one\n").unwrap();
        write_atomic(&out, b"two\n").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"two\n");
        assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 1);
    }
}
