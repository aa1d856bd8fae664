//! The rules files agents load (`AGENTS.md`, `CLAUDE.md`): every change to
//! what is in force refreshes a managed block listing the rules and notes
//! in force, in the files that exist (or that `[context] rules_files`
//! names: those are created when missing). Nothing outside the block's
//! markers is touched; a file without markers gets the block appended.
//!
//! The file at the top of the work tree lists the project's rules, each
//! with where it holds. A rules file of the same name in a sub-folder
//! (Codex and Claude Code read nested ones) lists what holds at that
//! folder's point, where the files in it sit (`[[points]]`), as `kapi
//! context <folder>` answers: the rules whose scope covers it and the
//! notes a person kept there. Sub-folder files are refreshed where they
//! exist, or created where `rules_files` names one by its path.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use super::{ContextError, Session};
use crate::formats::rules_block::{
    BlockNote, BlockRule, Place, RulesFileError, refresh_block, render_block, render_block_at,
};
use crate::ops::record::{Scope, Subject};
use crate::ops::scope::Point;
use crate::ops::{Ledger, OpId, RuleId, Status};

/// At most this many rules files in sub-folders are refreshed (in path
/// order): a checkout that holds more (a vendored tree, a hostile clone)
/// does not turn every decision into thousands of writes.
pub const MAX_FOLDER_FILES: usize = 1_000;

/// Why a rules file could not be refreshed (the name is as configured).
#[derive(Debug, thiserror::Error)]
pub enum RulesFileIo {
    #[error("cannot read {name}: {source}")]
    Read {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name}: {source}")]
    Block {
        name: String,
        #[source]
        source: RulesFileError,
    },
    #[error("cannot write {name}: {source}")]
    Write {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

/// `product=quickcast, until 2027-01-01` for a scope narrower than the
/// project; `in docs/**/*.md` for a rule an imported file held for some
/// files only.
fn describe(scope: &Scope, paths: &[String]) -> Option<String> {
    let mut parts = crate::ops::scope::pairs(&scope.point);
    if !paths.is_empty() {
        parts.push(format!("in {}", paths.join(" ")));
    }
    if let Some(from) = &scope.valid_from {
        parts.push(format!("from {from}"));
    }
    if let Some(to) = &scope.valid_to {
        parts.push(format!("until {to}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The block body for what is in force at `at` (Unix ms). A rule several
/// operations state ([`crate::ops::group`]: two agents suggested it, a
/// person kept it) is listed once where they hold alike, with every form
/// any of them avoids; a line that says what another already says is not
/// repeated.
pub fn render(ledger: &Ledger, at: Option<i64>) -> String {
    let (rules, notes) = in_force(ledger, at, None);
    render_block(&rules, &notes)
}

/// The rules and notes in force at `at`, at `point` (every point when
/// `None`), as a block lists them.
fn in_force(
    ledger: &Ledger,
    at: Option<i64>,
    point: Option<&Point>,
) -> (Vec<BlockRule>, Vec<BlockNote>) {
    let groups = ledger.rule_groups();
    let mut rules: Vec<BlockRule> = Vec::new();
    // Where a line stands, by its text and by its group and place.
    let mut by_text: HashMap<(String, Vec<String>, Option<String>), usize> = HashMap::new();
    let mut by_group: HashMap<(OpId, Option<String>), usize> = HashMap::new();
    for r in ledger
        .term_rules(point, at)
        .into_iter()
        .filter(|r| !r.suggested)
    {
        let lead = match &r.id {
            RuleId::Op(op) => Some(groups.of(op)[0]),
            _ => None,
        };
        let rule = BlockRule {
            preferred: r.preferred.unwrap_or_default(),
            // A pattern rule names what it avoids as `/pattern/`.
            avoided: r
                .avoided
                .into_iter()
                .chain(r.pattern.map(|p| format!("/{p}/")))
                .collect(),
            scope: describe(&r.scope, &r.paths),
        };
        let text = (
            rule.preferred.clone(),
            rule.avoided.clone(),
            rule.scope.clone(),
        );
        let group = lead.map(|lead| (lead, rule.scope.clone()));
        let listed = by_text
            .get(&text)
            .or_else(|| group.as_ref().and_then(|g| by_group.get(g)))
            .copied();
        match listed {
            Some(at) => {
                for form in rule.avoided {
                    if !rules[at].avoided.contains(&form) {
                        rules[at].avoided.push(form);
                    }
                }
            }
            None => {
                by_text.insert(text, rules.len());
                if let Some(group) = group {
                    by_group.insert(group, rules.len());
                }
                rules.push(rule);
            }
        }
    }
    let notes: Vec<BlockNote> = ledger
        .iter()
        .filter_map(|(record, state)| {
            let state = state?;
            match record.subject.as_deref() {
                Some(Subject::Note { text })
                    if state.status == Status::Established
                        && state.scope.in_force(at)
                        && point.is_none_or(|p| ledger.covers(record, &state.scope, p)) =>
                {
                    Some(BlockNote {
                        text: text.clone(),
                        scope: describe(&state.scope, &[]),
                    })
                }
                _ => None,
            }
        })
        .collect();
    (rules, notes)
}

/// Fold the log and refresh the rules files after what is in force
/// changed; returns the files written.
/// Refresh after a change was recorded: the files written, or why not
/// (the change stands either way).
pub fn refresh_after_change(session: &Session) -> (Vec<PathBuf>, Option<ContextError>) {
    match refresh_in_force(session) {
        Ok(written) => (written, None),
        Err(e) => (Vec::new(), Some(e)),
    }
}

/// The log is read only when there is a rules file to refresh: one that
/// exists, or one `rules_files` names (created when missing). A project
/// without any (most, and every CI checkout that records merge signals)
/// folds nothing here.
pub fn refresh_in_force(session: &Session) -> Result<Vec<PathBuf>, ContextError> {
    let targets = targets(session);
    let absent = |rel: &str| {
        matches!(std::fs::metadata(session.root.join(rel)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    };
    if targets.iter().all(|t| !t.create && absent(&t.rel)) {
        return Ok(Vec::new());
    }
    let ledger = session.rules_ledger()?;
    let written = refresh_targets(session, &ledger, targets);
    session.release(ledger);
    written
}

/// One rules file to refresh: its path relative to the work tree, and
/// whether it is created when missing (named by `rules_files`).
struct Target {
    rel: String,
    create: bool,
}

/// The rules files to refresh: each name of `rules_files` (or the
/// defaults) as written, then every file in a sub-folder that git lists
/// (tracked, or untracked and not ignored) under one of those names'
/// file names, at most [`MAX_FOLDER_FILES`] of them.
fn targets(session: &Session) -> Vec<Target> {
    let (names, named) = session.config.context.rules_files();
    let mut out: Vec<Target> = names
        .iter()
        .map(|name| Target {
            rel: name.trim_start_matches("./").to_owned(),
            create: named,
        })
        .collect();
    let file_names: Vec<&str> = out
        .iter()
        .map(|t| t.rel.rsplit('/').next().unwrap_or(&t.rel))
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>();
    if file_names.is_empty() {
        return out;
    }
    let file_names: Vec<String> = file_names.into_iter().map(str::to_owned).collect();
    // A work tree git cannot list has only its named files refreshed.
    let listed = session.store.git().files().unwrap_or_default();
    let mut folders = 0;
    for rel in listed {
        let Some((_, name)) = rel.rsplit_once('/') else {
            continue;
        };
        if !file_names.iter().any(|n| n == name) || out.iter().any(|t| t.rel == rel) {
            continue;
        }
        if folders == MAX_FOLDER_FILES {
            break;
        }
        folders += 1;
        out.push(Target { rel, create: false });
    }
    out
}

/// Refresh the managed block of every rules file that exists, or that
/// `[context] rules_files` names; returns the files written. The file at
/// the top of the work tree lists the project's rules; one in a
/// sub-folder, what holds at that folder's point.
pub fn refresh(session: &Session, ledger: &Ledger) -> Result<Vec<PathBuf>, ContextError> {
    refresh_targets(session, ledger, targets(session))
}

fn refresh_targets(
    session: &Session,
    ledger: &Ledger,
    targets: Vec<Target>,
) -> Result<Vec<PathBuf>, ContextError> {
    let at = Some(session.now_ms()? as i64);
    let project = render(ledger, at);
    let points = crate::context::PointMap::from_config(&session.config.points)?;
    // Folders at one point list the same rules and notes.
    let mut by_point: BTreeMap<Point, (Vec<BlockRule>, Vec<BlockNote>)> = BTreeMap::new();
    let mut written = Vec::new();
    for Target { rel, create } in targets {
        let name = rel.clone();
        let path = session.root.join(&rel);
        let existing = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            // The default files are refreshed, never created unasked.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(RulesFileIo::Read { name, source }.into()),
        };
        let body = match rel.rsplit_once('/') {
            None => project.clone(),
            Some((folder, _)) => {
                // A folder sits where the files in it do.
                let point = points.point(&format!("{folder}/_"));
                let (rules, notes) = by_point
                    .entry(point.clone())
                    .or_insert_with(|| in_force(ledger, at, Some(&point)));
                let pairs = crate::ops::scope::pairs(&point);
                render_block_at(
                    Place::Folder {
                        folder,
                        point: &pairs,
                    },
                    rules,
                    notes,
                )
            }
        };
        let updated =
            refresh_block(existing.as_deref(), &body).map_err(|source| RulesFileIo::Block {
                name: name.clone(),
                source,
            })?;
        if existing.as_deref() == Some(updated.as_str()) {
            continue;
        }
        write_in_place(&session.root, &path, &updated).map_err(|source| RulesFileIo::Write {
            name: name.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// Replace a file's contents atomically, writing through a symlink to its
/// target and keeping the file's permissions. A link is followed only to a
/// regular file inside the work tree: a checked-in `AGENTS.md` pointing at
/// a device or at a file elsewhere on the machine is never written.
fn write_in_place(
    root: &std::path::Path,
    path: &std::path::Path,
    contents: &str,
) -> std::io::Result<()> {
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    if target != path {
        let inside = std::fs::canonicalize(root).is_ok_and(|root| target.starts_with(root));
        let regular = std::fs::metadata(&target).is_ok_and(|m| m.is_file());
        if !inside || !regular {
            return Err(std::io::Error::other(format!(
                "it links to {}, which is not a regular file inside the work tree; kapi does not write there",
                target.display()
            )));
        }
    }
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    crate::atomic::replace(&target, contents.as_bytes(), permissions)
}
