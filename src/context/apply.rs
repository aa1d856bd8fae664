//! Edits an agent hands to kapi (the MCP server's `apply_edits`): applied
//! to the work tree all or none, and recorded as evidence. For each
//! suggestion whose preferred form the edits write, one `applied` signal
//! is recorded as the tool `apply`, naming the agent's session (seed: "An
//! agent's content edit applied through kapi apply or the apply_edits tool
//! records an applied signal"): standing only, never a decision.
//!
//! An edit names a file of the work tree, a text the file holds exactly
//! once, and its replacement. Nothing is written outside the work tree,
//! through a symbolic link, or under a `.git` folder; every edit is checked
//! against the file as read before any file is written, and a file changed
//! meanwhile stops them all.

use std::collections::BTreeMap;
use std::fs::Permissions;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{ContextError, Session, point_of, work_tree_path};
use crate::check::files::MAX_FILE_BYTES;
use crate::check::markdown::prose;
use crate::check::{Matcher, TermRule};
use crate::ops::Status;
use crate::ops::draft::{Draft, Drafted};
use crate::ops::id::OpId;
use crate::ops::record::{Actor, ActorKind, Signal, SignalSource};
use crate::ops::rules::RuleId;

/// At most this many edits in one call.
pub const MAX_EDITS: usize = 64;

/// One edit: in `path` (relative to the work tree), replace `old`, which
/// the file holds exactly once, by `new`.
#[derive(Debug, Clone)]
pub struct Edit {
    pub path: String,
    pub old: String,
    pub new: String,
}

/// What was applied, and the signals recorded for it.
#[derive(Debug, Serialize)]
pub struct Applied {
    /// The files written, each with how many edits it took.
    pub files: Vec<FileEdited>,
    /// One per suggestion whose preferred form the edits write.
    pub signals: Vec<AppliedSignal>,
    /// The edits were applied but their signals could not be recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrecorded: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FileEdited {
    pub path: String,
    pub edits: usize,
}

#[derive(Debug, Serialize)]
pub struct AppliedSignal {
    /// The suggestion.
    pub target: OpId,
    /// Uses of its preferred form the edits wrote, and of the forms it
    /// avoids.
    pub preferred: u64,
    pub avoided: u64,
    /// The signal's operation, once recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<OpId>,
}

/// One file to write: where, what it held, what it will hold.
struct Planned {
    rel: String,
    absolute: PathBuf,
    permissions: Permissions,
    before: String,
    after: String,
    edits: usize,
}

/// Apply `edits` to the work tree, all or none, and record an `applied`
/// signal for each suggestion whose preferred form they write.
pub fn apply_edits(session: &Session, edits: Vec<Edit>) -> Result<Applied, ContextError> {
    let prepared = prepare(session, edits, |n| format!("edit {}", n + 1))?;
    Ok(prepared.write()?.signal(session))
}

/// Edits read and checked against the files they name, nothing written
/// yet: what `kapi apply` holds while it checks its rule edits.
pub(crate) struct Prepared {
    plans: Vec<Planned>,
    counts: BTreeMap<OpId, (u64, u64)>,
}

/// Edits written: their signals are still to record, or the files to put
/// back when what they came with could not be recorded.
pub(crate) struct Written {
    plans: Vec<Planned>,
    counts: BTreeMap<OpId, (u64, u64)>,
}

/// Read the files `edits` name and check every edit against them (`name`
/// names the n-th edit in a message), and count what they write.
pub(crate) fn prepare(
    session: &Session,
    edits: Vec<Edit>,
    name: impl Fn(usize) -> String,
) -> Result<Prepared, ContextError> {
    if edits.is_empty() {
        return Err(ContextError::Usage(
            "no edits: give at least one {path, old, new}".into(),
        ));
    }
    if edits.len() > MAX_EDITS {
        return Err(ContextError::Usage(format!(
            "{} edits; one call applies at most {MAX_EDITS}",
            edits.len()
        )));
    }
    let mut plans: Vec<Planned> = Vec::new();
    for (n, edit) in edits.into_iter().enumerate() {
        let rel = work_tree_path(session, &edit.path)?;
        let at = match plans.iter().position(|p| p.rel == rel) {
            Some(at) => at,
            None => {
                plans.push(plan(session, rel)?);
                plans.len() - 1
            }
        };
        let planned = &mut plans[at];
        if edit.old.is_empty() {
            return Err(ContextError::Usage(format!(
                "{}: `old` is empty; give the text to replace, as the file holds it",
                name(n)
            )));
        }
        match planned.after.matches(edit.old.as_str()).count() {
            1 => {}
            0 => {
                return Err(ContextError::Usage(format!(
                    "{}: {} does not hold the text to replace{}; nothing was written",
                    name(n),
                    planned.rel,
                    if planned.edits > 0 {
                        " (after the edits before it)"
                    } else {
                        ""
                    }
                )));
            }
            k => {
                return Err(ContextError::Usage(format!(
                    "{}: {} holds the text to replace {k} times; give more of it, so it names one place; nothing was written",
                    name(n),
                    planned.rel
                )));
            }
        }
        planned.after = planned.after.replacen(edit.old.as_str(), &edit.new, 1);
        planned.edits += 1;
        if planned.after.len() as u64 > MAX_FILE_BYTES {
            return Err(ContextError::Usage(format!(
                "{} would grow past {} MiB; nothing was written",
                planned.rel,
                MAX_FILE_BYTES >> 20
            )));
        }
    }
    let counts = written_forms(session, &plans)?;
    Ok(Prepared { plans, counts })
}

impl Prepared {
    /// Write every file, or none.
    pub(crate) fn write(self) -> Result<Written, ContextError> {
        write_all(&self.plans)?;
        Ok(Written {
            plans: self.plans,
            counts: self.counts,
        })
    }
}

impl Written {
    /// Put back what each file held before (best effort): what the
    /// edits came with was refused.
    pub(crate) fn put_back(&self) {
        for p in &self.plans {
            let _ = crate::atomic::replace(
                &p.absolute,
                p.before.as_bytes(),
                Some(p.permissions.clone()),
            );
        }
    }

    /// Record the `applied` signals, and say what was written.
    pub(crate) fn signal(self, session: &Session) -> Applied {
        let files = self
            .plans
            .iter()
            .map(|p| FileEdited {
                path: p.rel.clone(),
                edits: p.edits,
            })
            .collect();
        let mut signals: Vec<AppliedSignal> = self
            .counts
            .into_iter()
            .map(|(target, (preferred, avoided))| AppliedSignal {
                target,
                preferred,
                avoided,
                id: None,
            })
            .collect();
        let unrecorded = record_signals(session, &mut signals)
            .err()
            .map(|e| e.to_string());
        Applied {
            files,
            signals,
            unrecorded,
        }
    }
}

/// A file's whole new text, made from the text it held when read
/// (`kapi check --fix`: the text the check read). Written by
/// [`rewrite`], through the same checks and signals as [`apply_edits`].
#[derive(Debug, Clone)]
pub struct Rewrite {
    /// Relative to the work tree, with forward slashes.
    pub path: String,
    /// What the file must still hold.
    pub before: String,
    pub after: String,
    /// How many changes `after` makes.
    pub edits: usize,
}

/// Write each file's new text, all or none, and record an `applied`
/// signal for each suggestion whose preferred form the new texts write:
/// [`apply_edits`] for a caller that made the whole text itself. A file
/// that no longer holds the text it was made from stops them all.
pub fn rewrite(session: &Session, rewrites: Vec<Rewrite>) -> Result<Applied, ContextError> {
    let mut plans: Vec<Planned> = Vec::with_capacity(rewrites.len());
    for r in rewrites {
        // A path the check names outside the work tree is as it was
        // named: absolute, or climbing out with `..`.
        let parts: Option<Vec<&str>> = Path::new(&r.path)
            .components()
            .map(|c| match c {
                std::path::Component::Normal(p) => p.to_str(),
                _ => None,
            })
            .collect();
        let Some(rel) = parts.filter(|p| !p.is_empty()).map(|p| p.join("/")) else {
            return Err(ContextError::Usage(format!(
                "{} is outside the work tree {}; nothing was written",
                r.path,
                session.root.display()
            )));
        };
        if plans.iter().any(|p| p.rel == rel) {
            return Err(ContextError::Usage(format!(
                "{rel} is named twice; nothing was written"
            )));
        }
        let mut planned = plan(session, rel)?;
        if planned.before != r.before {
            return Err(ContextError::Usage(format!(
                "{} changed since it was checked; nothing was written: check it again",
                planned.rel
            )));
        }
        if r.after.len() as u64 > MAX_FILE_BYTES {
            return Err(ContextError::Usage(format!(
                "{} would grow past {} MiB; nothing was written",
                planned.rel,
                MAX_FILE_BYTES >> 20
            )));
        }
        planned.after = r.after;
        planned.edits = r.edits;
        plans.push(planned);
    }
    finish(session, plans)
}

/// Write the planned files, all or none, and record the signals for the
/// suggestions they write.
fn finish(session: &Session, plans: Vec<Planned>) -> Result<Applied, ContextError> {
    let counts = written_forms(session, &plans)?;
    Ok(Prepared { plans, counts }.write()?.signal(session))
}

/// Whether `rel` is kapi's own configuration or an agent host's settings,
/// which name the hooks and the server that hold an agent to the rules:
/// an agent does not rewrite them through kapi. (Its host's own editing
/// tools are the host's to guard.) Compared without case, as a
/// case-insensitive file system would open them.
fn is_configuration(rel: &str) -> bool {
    let first = rel
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let nested = rel.contains('/');
    matches!(first.as_str(), "kapi.toml" | ".mcp.json") && !nested
        || matches!(first.as_str(), ".kapi" | ".claude" | ".codex") && nested
}

/// The file `rel` names, read to be edited: a regular file of the work
/// tree, reached through no symbolic link and under no `.git` folder.
fn plan(session: &Session, rel: String) -> Result<Planned, ContextError> {
    let refuse = |why: &str| {
        Err(ContextError::Usage(format!(
            "{rel}: {why}; nothing was written"
        )))
    };
    if rel.split('/').any(|part| part.eq_ignore_ascii_case(".git")) {
        return refuse("kapi writes nothing under .git");
    }
    if session.actor().kind != ActorKind::Person && is_configuration(&rel) {
        return refuse(
            "kapi's configuration and the agent hosts' settings (kapi.toml, .kapi/, .claude/, .codex/, .mcp.json) are a person's to change, not an agent's through kapi",
        );
    }
    let mut absolute = session.root.clone();
    let parts: Vec<&str> = rel.split('/').collect();
    // The file's own metadata, once the walk reaches it (not a link, so
    // its permissions are the file's).
    let mut permissions = None;
    for (k, part) in parts.iter().enumerate() {
        absolute.push(part);
        let meta = match std::fs::symlink_metadata(&absolute) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return refuse(
                    "no such file in the work tree (apply_edits edits files that exist)",
                );
            }
            Err(e) => return refuse(&format!("cannot read it: {e}")),
        };
        if meta.file_type().is_symlink() {
            return refuse(
                "it is reached through a symbolic link, which kapi does not write through",
            );
        }
        if k + 1 == parts.len() && !meta.is_file() {
            return refuse("not a file");
        }
        if k + 1 == parts.len() && meta.len() > MAX_FILE_BYTES {
            return refuse(&format!(
                "it has {} bytes; kapi edits files of at most {} MiB",
                meta.len(),
                MAX_FILE_BYTES >> 20
            ));
        }
        permissions = Some(meta.permissions());
    }
    let Some(permissions) = permissions else {
        return refuse("not a file");
    };
    let bytes = std::fs::read(&absolute)
        .map_err(|e| ContextError::Usage(format!("{rel}: cannot read it: {e}")))?;
    let Ok(before) = String::from_utf8(bytes) else {
        return refuse("not UTF-8 text");
    };
    Ok(Planned {
        rel,
        absolute,
        permissions,
        after: before.clone(),
        before,
        edits: 0,
    })
}

/// For each suggestion holding at an edited file, how many more uses of
/// its preferred form, and of the forms it avoids, the file holds after
/// the edits than before (only what was written counts).
fn written_forms(
    session: &Session,
    plans: &[Planned],
) -> Result<BTreeMap<OpId, (u64, u64)>, ContextError> {
    let mut counts: BTreeMap<OpId, (u64, u64)> = BTreeMap::new();
    let ledger = session.rules_ledger()?;
    let now = session.now_ms()? as i64;
    let formats = crate::check::Formats::new(&session.config.check)
        .map_err(|e| ContextError::Usage(format!("kapi.toml [check]: {e}")))?;
    for planned in plans {
        let point = point_of(&session.config, &planned.rel)?;
        let suggestions: Vec<TermRule> = ledger
            .term_rules(Some(&point), Some(now))
            .into_iter()
            .filter(|r| {
                matches!(r.status, Status::Suggested | Status::Contested)
                    && matches!(r.id, RuleId::Op(_))
            })
            .collect();
        if suggestions.is_empty() {
            continue;
        }
        let matcher =
            Matcher::for_usage(&suggestions).map_err(|e| ContextError::Usage(e.to_string()))?;
        let kind = formats.of(&planned.rel);
        let uses = |text: &str| {
            let mut n = vec![(0u64, 0u64); suggestions.len()];
            for hit in matcher.hits(text, &prose(text, kind)) {
                let slot = &mut n[hit.rule];
                if hit.preferred {
                    slot.0 += 1;
                } else {
                    slot.1 += 1;
                }
            }
            n
        };
        let (before, after) = (uses(&planned.before), uses(&planned.after));
        for (i, rule) in suggestions.iter().enumerate() {
            let RuleId::Op(target) = rule.id else {
                continue;
            };
            let preferred = after[i].0.saturating_sub(before[i].0);
            if preferred == 0 {
                continue;
            }
            let slot = counts.entry(target).or_default();
            slot.0 += preferred;
            slot.1 += after[i].1.saturating_sub(before[i].1);
        }
    }
    session.release(ledger);
    Ok(counts)
}

/// Write every planned file, or none: each is checked to hold what it held
/// when read before the first is written, and written atomically; if one
/// write fails, those before it are put back.
fn write_all(plans: &[Planned]) -> Result<(), ContextError> {
    for p in plans {
        let now = std::fs::read(&p.absolute).ok();
        if now.as_deref() != Some(p.before.as_bytes()) {
            return Err(ContextError::Usage(format!(
                "{} changed while the edits were prepared; nothing was written: read it again and retry",
                p.rel
            )));
        }
    }
    for (k, p) in plans.iter().enumerate() {
        if let Err(e) =
            crate::atomic::replace(&p.absolute, p.after.as_bytes(), Some(p.permissions.clone()))
        {
            for done in &plans[..k] {
                let _ = crate::atomic::replace(
                    &done.absolute,
                    done.before.as_bytes(),
                    Some(done.permissions.clone()),
                );
            }
            return Err(ContextError::Usage(format!(
                "{}: cannot write it ({e}); nothing was written",
                p.rel
            )));
        }
    }
    Ok(())
}

/// Record `signals` as the tool `apply`, in the acting session.
fn record_signals(session: &Session, signals: &mut [AppliedSignal]) -> Result<(), ContextError> {
    if signals.is_empty() {
        return Ok(());
    }
    let apply = Actor {
        kind: ActorKind::Tool,
        name: "apply".into(),
        session: session.actor().session.clone(),
    };
    let drafts = signals
        .iter()
        .map(|s| {
            Draft::from(Drafted::Signal {
                target: s.target,
                signal: Signal {
                    source: SignalSource::Applied,
                    preferred: s.preferred,
                    avoided: s.avoided,
                    commit: None,
                    pr: None,
                    merger: None,
                },
            })
        })
        .collect();
    let recorded = session.record_as(&apply, drafts, None)?;
    for (signal, record) in signals.iter_mut().zip(recorded) {
        signal.id = Some(record.op_id());
    }
    Ok(())
}
