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
    let mut out = Vec::new();
    for repo in registered(session.env()) {
        if repo.path == here || !repo.path.is_dir() {
            continue;
        }
        // Two checkouts of one project hold the same operations: a rule
        // counts once, by its project and id.
        for rule in widened_in(&repo.path, at) {
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

fn widened_in(path: &Path, at: Option<i64>) -> Vec<WorkspaceRule> {
    let Ok(store) = Store::discover(path) else {
        return Vec::new();
    };
    let Ok(loaded) = store.load_all() else {
        return Vec::new();
    };
    let ledger = crate::ops::fold(loaded.records);
    let mut out = Vec::new();
    for (record, state) in ledger.iter() {
        let Some(state) = state else { continue };
        let Some(Subject::Term { preferred, avoid }) = &record.subject else {
            continue;
        };
        if !state.scope.workspace || !state.status.answers() || !state.scope.in_force(at) {
            continue;
        }
        out.push(WorkspaceRule {
            project: record.project.clone(),
            repository: path.to_path_buf(),
            id: record.id.clone(),
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
