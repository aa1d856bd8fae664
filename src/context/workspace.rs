//! The workspace: every repository registered with kapi on this machine.
//!
//! Recording an operation from a checkout registers it, in the user's data
//! directory (`$XDG_DATA_HOME/kapi/repositories.jsonl`, else
//! `$HOME/.local/share/kapi/repositories.jsonl`): one JSON line per
//! repository, appended with a single write so two processes registering
//! at once lose neither line. A rule a person widened to the workspace
//! (`kapi context review --widen-to workspace`) stays in the deciding
//! project's log, where it travels like every other operation; the checks
//! and searches of the other registered repositories read it from there. A
//! project rule takes precedence over a workspace rule for the same term.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ContextError, Env, Session};
use crate::ops::forms::case_key;
use crate::ops::record::{Scope, Subject};
use crate::ops::{Status, TermRule};
use crate::store::Store;

/// The registry file's name inside `<data dir>/kapi/`.
const REGISTRY: &str = "repositories.jsonl";

/// One registered repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    /// The top of its work tree, canonical.
    pub path: PathBuf,
    /// Its project key when it registered.
    pub project: String,
}

/// The registry file, when the environment names a data directory.
pub fn registry_file(env: &dyn Env) -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| {
        v.filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute(env.var_os("XDG_DATA_HOME"))
        .or_else(|| absolute(env.var_os("HOME")).map(|h| h.join(".local/share")))
        .map(|d| d.join("kapi").join(REGISTRY))
}

/// Where the rules each registered log widens are cached:
/// `$XDG_CACHE_HOME/kapi/workspace`, else `$HOME/.cache/kapi/workspace`.
fn cache_dir(env: &dyn Env) -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| {
        v.filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute(env.var_os("XDG_CACHE_HOME"))
        .or_else(|| absolute(env.var_os("HOME")).map(|h| h.join(".cache")))
        .map(|d| d.join("kapi").join("workspace"))
}

/// Every repository the registry lists, once each (the latest line for a
/// path wins); an unreadable line is skipped.
pub fn registered(env: &dyn Env) -> Vec<Registered> {
    let Some(file) = registry_file(env) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Vec::new();
    };
    let mut out: Vec<Registered> = Vec::new();
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Registered>(line) else {
            continue;
        };
        match out.iter_mut().find(|r| r.path == entry.path) {
            Some(r) => *r = entry,
            None => out.push(entry),
        }
    }
    out
}

/// Register the session's checkout, unless it is registered under its
/// project key already. A repository with no work tree is not a checkout
/// and is not registered.
pub fn register(session: &Session) -> std::io::Result<()> {
    let Some(file) = registry_file(session.env()) else {
        return Ok(());
    };
    if session.store.work_tree().is_none() {
        return Ok(());
    }
    let path = session
        .root
        .canonicalize()
        .unwrap_or_else(|_| session.root.clone());
    let entry = Registered {
        path,
        project: session.project.clone(),
    };
    if registered(session.env()).contains(&entry) {
        return Ok(());
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut line = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)?;
    // One write of one line to a file opened for appending.
    f.write_all(line.as_bytes())
}

/// A term rule another registered repository widened to the workspace.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceRule {
    /// The project that decided it.
    pub project: String,
    /// Where that project's checkout is.
    pub repository: PathBuf,
    pub id: String,
    pub short: String,
    pub status: Status,
    #[serde(rename = "use")]
    pub preferred: String,
    pub avoid: Vec<String>,
    pub advisory: bool,
    pub scope: Scope,
}

impl WorkspaceRule {
    /// Whether its form to use or a form it avoids contains `needle`.
    pub fn mentions(&self, needle: &str) -> bool {
        let needle = needle.to_lowercase();
        std::iter::once(&self.preferred)
            .chain(&self.avoid)
            .any(|f| f.to_lowercase().contains(&needle))
    }

    /// Whether a rule of the project speaks for the same term: it shares a
    /// form (to use or to avoid) with this one, whatever the case. The
    /// project's rule then takes precedence.
    pub fn shadowed_by(&self, project: &[TermRule]) -> bool {
        let mine: Vec<String> = std::iter::once(&self.preferred)
            .chain(&self.avoid)
            .map(|f| case_key(f))
            .collect();
        project.iter().any(|r| {
            r.preferred
                .iter()
                .chain(&r.avoided)
                .any(|f| mine.contains(&case_key(f)))
        })
    }

    /// `"Quickcast", not "Quick cast"`
    pub fn describe(&self) -> String {
        let avoided: Vec<String> = self.avoid.iter().map(|a| format!("\"{a}\"")).collect();
        format!("\"{}\", not {}", self.preferred, avoided.join(", "))
    }
}

/// The rules every other registered repository widened to the workspace
/// and that answer at instant `at` (every window when `None`). A
/// repository that is gone or cannot be read is passed over: another
/// checkout's trouble never stops this one's check.
pub fn rules_at(session: &Session, at: Option<i64>) -> Vec<WorkspaceRule> {
    let here = session
        .root
        .canonicalize()
        .unwrap_or_else(|_| session.root.clone());
    let cache = cache_dir(session.env());
    let mut out = Vec::new();
    for repo in registered(session.env()) {
        if repo.path == here || !repo.path.is_dir() {
            continue;
        }
        // Two checkouts of one project hold the same operations: a rule
        // counts once, by its project and id.
        for rule in widened_in(&repo.path, at, cache.as_deref()) {
            if !out
                .iter()
                .any(|r: &WorkspaceRule| r.id == rule.id && r.project == rule.project)
            {
                out.push(rule);
            }
        }
    }
    out
}

/// [`rules_at`] in every window.
pub fn rules(session: &Session) -> Result<Vec<WorkspaceRule>, ContextError> {
    Ok(rules_at(session, None))
}

/// The rules `path`'s log widens to the workspace and that answer at `at`.
/// What a log widens changes only when its shared log does, so the answer
/// for every window is cached (under `cache`, keyed by the log's tip and
/// its journal) and a check does not fold every registered log each time.
fn widened_in(path: &Path, at: Option<i64>, cache: Option<&Path>) -> Vec<WorkspaceRule> {
    let Ok(store) = Store::discover(path) else {
        return Vec::new();
    };
    let stamp = fingerprint(&store);
    let file = cache.map(|dir| dir.join(format!("{}.json", cache_key(path))));
    let cached = file
        .as_ref()
        .zip(stamp.as_ref())
        .and_then(|(file, stamp)| read_cache(file, stamp));
    let rules = match cached {
        Some(rules) => rules,
        None => {
            let Ok(loaded) = store.load_all() else {
                return Vec::new();
            };
            let rules = widened_by(path, crate::ops::fold(loaded.records));
            if let (Some(file), Some(stamp)) = (&file, &stamp) {
                write_cache(file, stamp, &rules);
            }
            rules
        }
    };
    rules.into_iter().filter(|r| r.scope.in_force(at)).collect()
}

/// What the shared log of a store is now: its tip and its journal's size
/// and modification time. `None` when it cannot be read (then nothing is
/// cached).
fn fingerprint(store: &Store) -> Option<String> {
    let tip = store
        .tip(crate::store::LogRef::Shared)
        .ok()?
        .map(|t| t.to_string())
        .unwrap_or_default();
    let journal = match std::fs::metadata(store.kapi_dir().join("journal")) {
        Ok(m) => {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{mtime}", m.len())
        }
        Err(_) => "none".into(),
    };
    Some(format!(
        "{}:{tip}:{journal}",
        crate::ops::record::FORMAT_VERSION
    ))
}

fn cache_key(path: &Path) -> String {
    crate::digest::sha256_hex(path.to_string_lossy().as_bytes())[..32].to_owned()
}

/// A cache entry: the fingerprint it was computed for and the rules.
#[derive(Serialize, Deserialize)]
struct Cached {
    stamp: String,
    rules: Vec<CachedRule>,
}

#[derive(Serialize, Deserialize)]
struct CachedRule {
    project: String,
    repository: PathBuf,
    id: String,
    status: String,
    preferred: String,
    avoid: Vec<String>,
    advisory: bool,
    scope: Scope,
}

/// The cached rules when the entry was computed for `stamp`; a damaged or
/// stale entry is computed again.
fn read_cache(file: &Path, stamp: &str) -> Option<Vec<WorkspaceRule>> {
    let text = std::fs::read_to_string(file).ok()?;
    let cached: Cached = serde_json::from_str(&text).ok()?;
    if cached.stamp != stamp {
        return None;
    }
    cached
        .rules
        .into_iter()
        .map(|r| {
            Some(WorkspaceRule {
                short: crate::ops::id::short(&r.id).to_owned(),
                status: Status::parse(&r.status)?,
                project: r.project,
                repository: r.repository,
                id: r.id,
                preferred: r.preferred,
                avoid: r.avoid,
                advisory: r.advisory,
                scope: r.scope,
            })
        })
        .collect()
}

/// Write a cache entry whole or not at all; a cache that cannot be written
/// is computed again next time.
fn write_cache(file: &Path, stamp: &str, rules: &[WorkspaceRule]) {
    let cached = Cached {
        stamp: stamp.to_owned(),
        rules: rules
            .iter()
            .map(|r| CachedRule {
                project: r.project.clone(),
                repository: r.repository.clone(),
                id: r.id.clone(),
                status: r.status.as_str().to_owned(),
                preferred: r.preferred.clone(),
                avoid: r.avoid.clone(),
                advisory: r.advisory,
                scope: r.scope.clone(),
            })
            .collect(),
    };
    let Ok(bytes) = serde_json::to_vec(&cached) else {
        return;
    };
    if let Some(dir) = file.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = crate::atomic::replace(file, &bytes, None);
    }
}

/// The term rules a folded log widens to the workspace and that answer,
/// in every window.
fn widened_by(path: &Path, ledger: crate::ops::Ledger) -> Vec<WorkspaceRule> {
    let mut out = Vec::new();
    for (record, state) in ledger.iter() {
        let Some(state) = state else { continue };
        let Some(Subject::Term { preferred, avoid }) = &record.subject else {
            continue;
        };
        if !state.scope.workspace || !state.status.answers() {
            continue;
        }
        out.push(WorkspaceRule {
            project: record.project.to_string(),
            repository: path.to_path_buf(),
            id: record.id.to_string(),
            short: record.short().to_owned(),
            status: state.status,
            preferred: preferred.clone(),
            avoid: avoid.clone(),
            advisory: state.advisory,
            scope: state.scope.clone(),
        });
    }
    out
}
