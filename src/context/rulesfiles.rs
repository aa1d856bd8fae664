//! The rules files agents load (`AGENTS.md`, `CLAUDE.md`): every change to
//! what is in force refreshes a managed block listing the rules and notes
//! in force, in the files that exist (or that `[context] rules_files`
//! names: those are created when missing). Nothing outside the block's
//! markers is touched; a file without markers gets the block appended.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{ContextError, Session};
use crate::formats::rules_block::{
    BlockNote, BlockRule, RulesFileError, refresh_block, render_block,
};
use crate::ops::record::{Scope, Subject};
use crate::ops::{Ledger, OpId, RuleId, Status};

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

/// `product=quickcast, until 2027-01-01` for a scope narrower than the project.
fn describe(scope: &Scope) -> Option<String> {
    let mut parts = crate::ops::scope::pairs(&scope.point);
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
    let groups = ledger.rule_groups();
    let mut rules: Vec<BlockRule> = Vec::new();
    // Where a line stands, by its text and by its group and place.
    let mut by_text: HashMap<(String, Vec<String>, Option<String>), usize> = HashMap::new();
    let mut by_group: HashMap<(OpId, Option<String>), usize> = HashMap::new();
    for r in ledger
        .term_rules(None, at)
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
            scope: describe(&r.scope),
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
            match &record.subject {
                Some(Subject::Note { text })
                    if state.status == Status::Established && state.scope.in_force(at) =>
                {
                    Some(BlockNote {
                        text: text.clone(),
                        scope: describe(&state.scope),
                    })
                }
                _ => None,
            }
        })
        .collect();
    render_block(&rules, &notes)
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

pub fn refresh_in_force(session: &Session) -> Result<Vec<PathBuf>, ContextError> {
    let ledger = session.rules_ledger()?;
    let written = refresh(session, &ledger);
    session.release(ledger);
    written
}

/// Refresh the managed block of every rules file that exists, or that
/// `[context] rules_files` names; returns the files written.
pub fn refresh(session: &Session, ledger: &Ledger) -> Result<Vec<PathBuf>, ContextError> {
    let body = render(ledger, Some(session.now_ms()? as i64));
    let mut written = Vec::new();
    let (names, named) = session.config.context.rules_files();
    for name in names {
        let path = session.root.join(&name);
        let existing = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            // The default files are refreshed, never created unasked.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(RulesFileIo::Read { name, source }.into()),
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
