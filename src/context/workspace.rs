//! The workspace: the repositories kapi knows on this machine, and the
//! rules some of them share with all the others.
//!
//! Recording an operation from a checkout, or merging operations into its
//! log (sync, `kapi store import FILE`), registers it in the user's data
//! directory ([`registry`]), so `kapi workspace list` can name it. A
//! registered repository shares the rules its log widens to the workspace
//! only when a person chose that on this machine: `kapi workspace add`, or
//! their own `kapi context review --widen-to workspace` in that checkout.
//! A clone, a sync, an import or an agent's note never does, so a log
//! fetched from elsewhere (whatever person it claims decided) puts nothing
//! in force in the other checkouts. A rule a person widened to the
//! workspace stays in the deciding project's log, where it travels like
//! every other operation; the checks and searches of the other
//! repositories read it from there. A project rule takes precedence over a
//! workspace rule for the same term.

pub(crate) mod atlas;
pub mod registry;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ContextError, Env, Session};
use crate::ops::actor::ActorError;
use crate::ops::forms::case_key;
use crate::ops::policy::{PolicyError, WorkspaceChoice, may_choose_workspace};
use crate::ops::record::{Scope, Subject};
use crate::ops::{OpId, Status, TermRule};
use crate::store::Store;

pub(crate) use registry::registry_file;
pub use registry::{Registered, RegistryError};

/// Why the workspace could not be changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkspaceError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Actor(#[from] ActorError),
    #[error(
        "{} has no work tree (a bare repository is no checkout, and shares nothing); name a checkout",
        .0.display()
    )]
    NotACheckout(PathBuf),
    #[error(
        "{} is not registered with the workspace; `kapi workspace list` shows what is",
        .0.display()
    )]
    NotRegistered(PathBuf),
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
/// path wins); an unreadable line is skipped, and a registry that is not
/// a regular file reads as empty.
pub(crate) fn registered(env: &dyn Env) -> Vec<Registered> {
    registry::read(env).entries
}

/// The top of the session's work tree, canonical.
fn checkout(session: &Session) -> PathBuf {
    session
        .root
        .canonicalize()
        .unwrap_or_else(|_| session.root.clone())
}

/// Register the session's checkout, unless it is registered under its
/// project key already (then whether it shares is left as it is). A new
/// registration, or one under a new project key, does not share. A
/// repository with no work tree is not a checkout and is not registered.
pub(crate) fn register(session: &Session) -> Result<(), RegistryError> {
    let Some(file) = registry_file(session.env()) else {
        return Ok(());
    };
    if session.store.work_tree().is_none() {
        return Ok(());
    }
    let path = checkout(session);
    let registry = registry::read_file(&file);
    if registry.unread.is_some()
        || registry
            .get(&path)
            .is_some_and(|e| e.project == session.project)
    {
        return Ok(());
    }
    registry::append(
        &file,
        &Registered {
            path,
            project: session.project.clone(),
            shares: false,
        },
    )
}

/// What `kapi workspace add` did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Added {
    /// The checkout, canonical.
    pub path: PathBuf,
    pub project: String,
    /// It shared its rules already: nothing was written.
    pub already: bool,
}

/// Share the session's checkout's workspace rules with every other
/// repository on this machine (`kapi workspace add`): a person's choice,
/// refused to an agent or a tool.
pub(crate) fn add(session: &Session) -> Result<Added, WorkspaceError> {
    may_choose_workspace(session.actor(), WorkspaceChoice::Add)?;
    if session.store.work_tree().is_none() {
        return Err(WorkspaceError::NotACheckout(session.root.clone()));
    }
    Ok(share(session)?)
}

/// Mark the session's checkout as sharing (the caller has made sure a
/// person chose it), unless it shares already under its project key.
pub(crate) fn share(session: &Session) -> Result<Added, RegistryError> {
    let file = registry_file(session.env()).ok_or(RegistryError::NoDataDir)?;
    let path = checkout(session);
    let registry = registry::read_file(&file);
    if let Some(why) = registry.unread {
        return Err(RegistryError::Unreadable { file, why });
    }
    let already = registry
        .get(&path)
        .is_some_and(|e| e.project == session.project && e.shares);
    if !already {
        registry::append(
            &file,
            &Registered {
                path: path.clone(),
                project: session.project.clone(),
                shares: true,
            },
        )?;
    }
    Ok(Added {
        path,
        project: session.project.clone(),
        already,
    })
}

/// Which entries `kapi workspace forget` removes.
#[derive(Debug, Clone)]
pub(crate) enum Forget {
    /// These repositories (absolute paths; canonical where they exist).
    Paths(Vec<PathBuf>),
    /// Every one whose folder is gone.
    Gone,
}

/// What `kapi workspace forget` removed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Forgotten {
    pub forgotten: Vec<Registered>,
}

/// Rewrite the registry without the entries `what` names (a person's
/// choice: an agent or a tool is refused), compacted to one line per
/// repository. Naming a path that is not registered is an error and
/// changes nothing.
pub(crate) fn forget(env: &dyn Env, what: &Forget) -> Result<Forgotten, WorkspaceError> {
    // Only the kind of actor matters here, and it comes from the
    // environment: no repository's git identity is needed to name it.
    let actor = crate::ops::actor::detect(|name| env.var_os(name), || (None, None))?;
    may_choose_workspace(&actor, WorkspaceChoice::Forget)?;
    let file = registry_file(env).ok_or(RegistryError::NoDataDir)?;
    let wait = env
        .lock_timeout()
        .ok()
        .flatten()
        .unwrap_or(crate::store::lock::DEFAULT_TIMEOUT);
    let forgotten = match what {
        Forget::Gone => registry::rewrite(&file, wait, |e| !e.path.is_dir())?,
        Forget::Paths(paths) => {
            let named: HashSet<PathBuf> = paths
                .iter()
                .flat_map(|p| [p.clone(), p.canonicalize().unwrap_or_else(|_| p.clone())])
                .collect();
            let registry = registry::read_file(&file);
            if let Some(why) = registry.unread {
                return Err(RegistryError::Unreadable { file, why }.into());
            }
            for path in paths {
                let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
                if registry.get(path).is_none() && registry.get(&canonical).is_none() {
                    return Err(WorkspaceError::NotRegistered(path.clone()));
                }
            }
            registry::rewrite(&file, wait, |e| named.contains(&e.path))?
        }
    };
    Ok(Forgotten { forgotten })
}

/// One repository as `kapi workspace list` shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Listed {
    pub path: PathBuf,
    pub project: String,
    /// Its folder is still there.
    pub exists: bool,
    /// A person chose to share the rules its log widens to the workspace.
    pub shares: bool,
}

/// `kapi workspace list`: every registered repository, and what kept any
/// of the registry from being read.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Listing {
    /// The registry file (none when no data directory is set).
    pub registry: Option<PathBuf>,
    /// Why the registry was read as empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
    /// Lines skipped: not an entry, or too long.
    pub skipped_lines: usize,
    /// Older bytes not read, past the newest 1 MiB.
    pub skipped_bytes: u64,
    pub repositories: Vec<Listed>,
}

/// Every registered repository, whether it still exists and whether it
/// shares its rules with the workspace.
pub(crate) fn list(env: &dyn Env) -> Listing {
    let registry = registry::read(env);
    Listing {
        registry: registry.file,
        unread: registry.unread.map(|u| u.to_string()),
        skipped_lines: registry.skipped_lines,
        skipped_bytes: registry.skipped_bytes,
        repositories: registry
            .entries
            .into_iter()
            .map(|e| Listed {
                exists: e.path.is_dir(),
                path: e.path,
                project: e.project,
                shares: e.shares,
            })
            .collect(),
    }
}

/// A term rule another registered repository widened to the workspace.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WorkspaceRule {
    /// The project that decided it.
    pub project: String,
    /// Where that project's checkout is.
    pub repository: PathBuf,
    pub id: OpId,
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

/// The rules every other repository that shares with the workspace (a
/// person chose it: [`Registered::shares`]) widened to the workspace and
/// that answer at instant `at` (every window when `None`). A repository
/// that is gone or cannot be read is passed over: another checkout's
/// trouble never stops this one's check.
pub(crate) fn rules_at(session: &Session, at: Option<i64>) -> Vec<WorkspaceRule> {
    rules_of(session, &sharing_others(session), at)
}

/// Every other registered repository that shares with the workspace and
/// is still a folder.
fn sharing_others(session: &Session) -> Vec<Registered> {
    let here = checkout(session);
    registered(session.env())
        .into_iter()
        .filter(|r| r.shares && r.path != here && r.path.is_dir())
        .collect()
}

/// [`rules_at`] over the repositories `sharing`.
fn rules_of(session: &Session, sharing: &[Registered], at: Option<i64>) -> Vec<WorkspaceRule> {
    let cache = cache_dir(session.env());
    let mut out = Vec::new();
    for repo in sharing {
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
pub(crate) fn rules(session: &Session) -> Result<Vec<WorkspaceRule>, ContextError> {
    Ok(rules_at(session, None))
}

/// `kapi store rebuild`'s share of the workspace: remove every log's
/// cached answer (the files this cache writes, by their names alone) and
/// read again each registered log that shares with the workspace. Returns
/// how many entries were removed and how many logs were read.
pub(crate) fn rebuild_cache(session: &Session) -> (usize, usize) {
    let mut removed = 0;
    if let Some(dir) = cache_dir(session.env())
        && let Ok(entries) = std::fs::read_dir(&dir)
    {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let ours = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .is_some_and(|key| key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit()));
            if ours && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    let sharing = sharing_others(session);
    let _ = rules_of(session, &sharing, None);
    (removed, sharing.len())
}

/// The rules `path`'s log widens to the workspace and that answer at `at`.
/// What a log widens changes only when its shared log does, so the answer
/// for every window is cached (under `cache`, keyed by the log's tip and
/// its journal) and a check does not fold every registered log each time.
fn widened_in(path: &Path, at: Option<i64>, cache: Option<&Path>) -> Vec<WorkspaceRule> {
    let Ok(store) = Store::discover(path) else {
        return Vec::new();
    };
    // Its rules count here as its own fold counts them: by its `[trust]`.
    let Ok(trust) = trust_of(&store) else {
        return Vec::new();
    };
    let stamp = fingerprint(&store).map(|stamp| match &trust {
        Some(t) => format!("{stamp}:trust {:?} {}", t.mode, t.digest),
        None => stamp,
    });
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
            let ledger = crate::ops::Ledger::new(loaded.records)
                .with_trust(trust)
                .folded();
            let rules = widened_by(path, ledger);
            if let (Some(file), Some(stamp)) = (&file, &stamp) {
                write_cache(file, stamp, &rules);
            }
            rules
        }
    };
    rules.into_iter().filter(|r| r.scope.in_force(at)).collect()
}

/// The trust another repository's own fold reads by: its `[trust]` (its
/// kapi.toml, read as any file of another checkout is: capped, no FIFO,
/// no link) and its allowed-signers file as its default branch holds it.
/// A rule it shares then counts here only as it counts there: with
/// `decisions = "signed"` there, a keep nobody listed there signed puts
/// nothing in force here either. `Err` when its kapi.toml cannot be read
/// (the repository is passed over, as one that is gone).
fn trust_of(store: &Store) -> Result<Option<std::sync::Arc<crate::ops::trust::Trust>>, ()> {
    let Some(root) = store.work_tree() else {
        return Ok(None);
    };
    let text = match crate::fsutil::read_optional(
        &root.join(crate::config::FILE_NAME),
        crate::fsutil::Links::Refuse,
    ) {
        Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| ())?,
        Ok(None) => return Ok(None),
        Err(_) => return Err(()),
    };
    let config = crate::config::Config::parse(&text).map_err(|_| ())?;
    let Some(trust) = &config.trust else {
        return Ok(None);
    };
    let project = super::runtime::project_key(&config, store, root).map_err(|_| ())?;
    let max = crate::formats::allowed_signers::MAX_FILE_BYTES as u64;
    let bytes = match store
        .git()
        .default_branch_file(trust.allowed_signers(), max)
    {
        Ok(Some(crate::git::Blob::Bytes(bytes))) => bytes,
        _ => Vec::new(),
    };
    Ok(Some(crate::ops::trust::Trust::new(
        trust.decisions,
        &project,
        &bytes,
    )))
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
    id: OpId,
    status: String,
    preferred: String,
    avoid: Vec<String>,
    advisory: bool,
    scope: Scope,
}

/// The cached rules when the entry was computed for `stamp`; a damaged or
/// stale entry is computed again.
fn read_cache(file: &Path, stamp: &str) -> Option<Vec<WorkspaceRule>> {
    // Through the same door as the registry: a FIFO or a device planted at
    // the entry's name is passed over (and computed again), never waited on.
    let bytes = crate::fsutil::read_capped(file, crate::fsutil::Links::Refuse).ok()?;
    let cached: Cached = serde_json::from_slice(&bytes).ok()?;
    if cached.stamp != stamp {
        return None;
    }
    cached
        .rules
        .into_iter()
        .map(|r| {
            Some(WorkspaceRule {
                short: r.id.short().to_owned(),
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
                id: r.id,
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
        let Some(Subject::Term { preferred, avoid }) = record.subject.as_deref() else {
            continue;
        };
        if !state.scope.workspace || !state.status.answers() {
            continue;
        }
        out.push(WorkspaceRule {
            project: record.project.to_string(),
            repository: path.to_path_buf(),
            id: record.op_id(),
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
