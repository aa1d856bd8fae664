//! Declared artifacts (`[[compile]]` in `kapi.toml`), the cooperating
//! advisory lock and atomic writes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::config::CompileEntry;
use crate::vault::{Grant, Sensitivity};

use super::{Ranking, Recipe};

/// The advisory lock file of a vault outside a git repository. Scanning
/// skips it (hidden).
pub const LOCK_FILE: &str = ".kapi-lock";

/// Where the vault's cooperating lock lives: `.git/kapi/vault.lock` of the
/// enclosing repository, else `<vault>/.kapi-lock`.
pub fn lock_path(root: &Path) -> PathBuf {
    let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    match absolute
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.is_dir())
    {
        Some(git) => git.join("kapi").join("vault.lock"),
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

/// Hold the vault's shared (read) lock while verifying. `None` when the
/// lock file cannot be created (a read-only vault): verification then
/// proceeds without it. Editors that ignore advisory locks are outside
/// this guarantee.
// File::lock_shared is stable since Rust 1.89; the toolchain is newer
// than the manifest's rust-version.
#[allow(clippy::incompatible_msrv)]
pub fn lock_shared(root: &Path) -> Option<File> {
    let path = lock_path(root);
    let file = open_lock(&path).or_else(|_| File::open(&path)).ok()?;
    file.lock_shared().ok()?;
    Some(file)
}

/// Hold the vault's exclusive lock while regenerating artifacts.
#[allow(clippy::incompatible_msrv)]
pub fn lock_exclusive(root: &Path) -> std::io::Result<File> {
    let file = open_lock(&lock_path(root))?;
    file.lock()?;
    Ok(file)
}

/// Write `bytes` to `path` atomically: a temporary file beside it, synced,
/// then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("artifact");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A `[[compile]]` entry made ready: where it goes and how it is compiled.
#[derive(Debug, Clone)]
pub struct Declared {
    pub output: PathBuf,
    pub root: PathBuf,
    pub recipe: Recipe,
    pub grant: Grant,
}

/// Resolve a `[[compile]]` entry relative to the project directory.
pub fn declared(
    project: &Path,
    default_root: &Path,
    entry: &CompileEntry,
) -> Result<Declared, String> {
    let ranking = match entry.ranking.as_deref() {
        None => Ranking::Substring,
        Some(r) => Ranking::parse(r).ok_or_else(|| format!("unknown ranking `{r}`"))?,
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
    recipe.validate().map_err(|e| e.to_string())?;
    let grant = grant_from(entry.max_sensitivity.as_deref(), entry.allow.as_deref())?;
    let root = project.join(entry.root.as_deref().unwrap_or(default_root));
    Ok(Declared {
        output: project.join(&entry.output),
        root,
        recipe,
        grant,
    })
}

/// The grant from `max_sensitivity` or an exact `allow` list; public by default.
pub fn grant_from(max: Option<&str>, allow: Option<&[String]>) -> Result<Grant, String> {
    match (max, allow) {
        (Some(_), Some(_)) => Err("give either max_sensitivity or allow, not both".into()),
        (Some(m), None) => {
            Sensitivity::parse(m).map(Grant::up_to).ok_or_else(|| format!("unknown sensitivity label `{m}`"))
        }
        (None, Some(list)) => Grant::parse_list(&list.join(","))
            .map_err(|bad| format!("unknown sensitivity label `{bad}` (labels: public, internal, confidential, restricted)")),
        (None, None) => Ok(Grant::public()),
    }
}
