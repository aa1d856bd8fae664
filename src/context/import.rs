//! `kapi store import` without a file: read the checkout's context files —
//! term lists declared in kapi.toml, Vale vocabularies and Vale
//! substitution styles — into the log, one `import` operation per file,
//! by a person, carrying the file's path and SHA-256, established from the
//! start. A second import of unchanged bytes records nothing.
//!
//! A profile's own term lists (`.kapi/profiles/<name>/*.tsv`) are found
//! without being named, and their rules are imported at the profile (the
//! axis `profile`): they hold only where `[[points]]` names the profile.

use std::collections::BTreeMap;
use std::path::Path;

use globset::Glob;
use serde::Serialize;

use super::door::Recorded;
use super::{ContextError, Session};
use crate::formats::vale::{BUILTIN_STYLE, Enabled, Level, VOCABULARY_RULES, ValeIni};
use crate::formats::{self, ImportedFile, RuleStatus, Vocabulary};
use crate::git::walk::Walk;
use crate::ops::record::{Evidence, Kind, MAX_TERMS, Scope, Subject, TermEntry};
use crate::ops::{Draft, Drafted};
use crate::ops::{Ledger, OpId, RuleId};

/// The largest context file read.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// What kind of context file a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextFileKind {
    TermList,
    ValeAccept,
    ValeReject,
    ValeSubstitution,
}

/// A context file found in the checkout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextFile {
    /// Relative to the work tree, forward slashes.
    pub path: String,
    pub kind: ContextFileKind,
    /// The profile whose folder (`.kapi/profiles/<name>/`) holds it: its
    /// rules are imported at that profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// The profile a context file belongs to: the folder under
/// `.kapi/profiles/` it sits in, at any depth.
fn profile_of(path: &str) -> Option<String> {
    let rest = path
        .strip_prefix(super::points::PROFILES_DIR)?
        .strip_prefix('/')?;
    let (name, _) = rest.split_once('/')?;
    Some(name.to_owned())
}

/// What importing one file did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum ImportOutcome {
    Imported {
        id: String,
        rules: usize,
        skipped: Vec<(usize, String)>,
    },
    Unchanged,
    /// A Vale style Vale itself refuses (not YAML, a duplicate key, `swap`
    /// not a mapping): nothing of it is imported, the other files are.
    Refused {
        message: String,
    },
    Failed {
        message: String,
    },
}

/// Find the checkout's context files.
pub fn context_files(
    root: &Path,
    config: &crate::config::ContextConfig,
) -> Result<Vec<ContextFile>, ContextError> {
    let mut out = Vec::new();
    for entry in &config.terms {
        if entry.contains(['*', '?', '[', '{']) {
            let glob = Glob::new(entry)
                .map_err(|e| ContextError::Usage(format!("kapi.toml [context] terms: {e}")))?;
            let matcher = glob.compile_matcher();
            let mut found = Vec::new();
            walk(root, root, &mut |rel| {
                if matcher.is_match(rel) {
                    found.push(rel.to_owned());
                }
            });
            found.sort();
            out.extend(found.into_iter().map(|path| ContextFile {
                profile: profile_of(&path),
                path,
                kind: ContextFileKind::TermList,
            }));
        } else {
            let path = entry.trim_start_matches("./").to_owned();
            if !root.join(&path).is_file() {
                return Err(ContextError::Usage(format!(
                    "kapi.toml [context] terms names {path}, which is not a file in the work tree"
                )));
            }
            out.push(ContextFile {
                profile: profile_of(&path),
                path,
                kind: ContextFileKind::TermList,
            });
        }
    }
    // Each profile's own term lists: `.kapi/profiles/<name>/*.tsv`.
    let profiles = root.join(super::points::PROFILES_DIR);
    if profiles.is_dir() {
        let mut found = Vec::new();
        PROFILE_FILES.files(&profiles, &mut |rel, _| {
            if rel.matches('/').count() == 1 && rel.ends_with(".tsv") {
                found.push(format!("{}/{rel}", super::points::PROFILES_DIR));
            }
        });
        out.extend(found.into_iter().map(|path| ContextFile {
            profile: profile_of(&path),
            path,
            kind: ContextFileKind::TermList,
        }));
    }
    if config.vale.unwrap_or(true)
        && let Some(styles) = vale_styles_path(root)
    {
        // A .vale.ini the INI reader refuses is reported by the import.
        let ini = vale_ini(root).ok().flatten();
        let mut found = Vec::new();
        walk(root, &root.join(&styles), &mut |rel| {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            // A vocabulary `Vocab` in .vale.ini does not name is not in use
            // (Vale loads none when `Vocab` is not set).
            let vocab = rel.rsplit('/').nth(1).unwrap_or("");
            if matches!(name, "accept.txt" | "reject.txt")
                && ini.as_ref().is_some_and(|i| !i.uses_vocab(vocab))
            {
                return;
            }
            let kind = match name {
                "accept.txt" => Some(ContextFileKind::ValeAccept),
                "reject.txt" => Some(ContextFileKind::ValeReject),
                n if n.ends_with(".yml") || n.ends_with(".yaml") => {
                    let text = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
                    is_substitution(&text).then_some(ContextFileKind::ValeSubstitution)
                }
                _ => None,
            };
            if let Some(kind) = kind {
                found.push(ContextFile {
                    path: rel.to_owned(),
                    kind,
                    profile: profile_of(rel),
                });
            }
        });
        found.sort_by(|a, b| a.path.cmp(&b.path));
        out.extend(found);
    }
    // A file named twice (a glob and a profile's folder) is read once.
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(f.path.clone()));
    Ok(out)
}

/// Whether a style file is for the substitution reader: it extends
/// `substitution`, or it is not valid YAML (Vale refuses it; importing it
/// says why, with its line, rather than leaving it out silently).
fn is_substitution(text: &str) -> bool {
    match formats::yaml::parse(text) {
        Ok(doc) => doc.get("extends").and_then(|n| n.as_str()) == Some("substitution"),
        Err(_) => true,
    }
}

/// `StylesPath` from the work tree's `.vale.ini`, as the checker reads it
/// (a folder inside the work tree, or none).
fn vale_styles_path(root: &Path) -> Option<String> {
    crate::formats::vale::styles_path(&std::fs::read_to_string(root.join(".vale.ini")).ok()?)
}

/// The walk of `.kapi/profiles/`: each profile's folder and the files in it.
const PROFILE_FILES: Walk = Walk {
    skip_hidden: true,
    skip_dirs: &[],
    max_depth: 1,
};

/// Visit regular files under `dir` (no symlinks, bounded depth), with paths
/// relative to `root`; skips `.git`, `target` and `node_modules`.
fn walk(root: &Path, dir: &Path, visit: &mut dyn FnMut(&str)) {
    const CONTEXT_FILES: Walk = Walk {
        skip_hidden: false,
        skip_dirs: &[".git", "target", "node_modules"],
        max_depth: 8,
    };
    CONTEXT_FILES.files(dir, &mut |_, path| {
        if let Ok(rel) = path.strip_prefix(root) {
            visit(&rel.to_string_lossy().replace('\\', "/"));
        }
    });
}

/// The work tree's `.vale.ini`, read (`None` when there is none).
fn vale_ini(root: &Path) -> Result<Option<ValeIni>, ContextError> {
    let Ok(text) = std::fs::read_to_string(root.join(".vale.ini")) else {
        return Ok(None);
    };
    ValeIni::parse(&text)
        .map(Some)
        .map_err(|e| ContextError::Usage(format!(".vale.ini: {e}")))
}

/// Parse one context file into term entries.
fn parse(file: &ContextFile, text: &str, ini: Option<&ValeIni>) -> Result<ImportedFile, String> {
    let parsed = match file.kind {
        ContextFileKind::TermList => formats::parse_term_list(text),
        ContextFileKind::ValeAccept => Vocabulary::parse(Some(text), None)
            .map(|v| vocabulary_in_force(v.rules(), ini, VOCABULARY_RULES.0)),
        ContextFileKind::ValeReject => Vocabulary::parse(None, Some(text))
            .map(|v| vocabulary_in_force(v.rules(), ini, VOCABULARY_RULES.1)),
        ContextFileKind::ValeSubstitution => {
            formats::parse_vale_substitution(text).map(|f| match ini {
                Some(ini) => {
                    let (style, rule) = style_rule(ini, &file.path);
                    in_force(f, ini, style, rule)
                }
                None => f,
            })
        }
    };
    parsed.map_err(|e| format!("{}: {e}", file.path))
}

/// A vocabulary file's rules as Vale applies them: as the rule `rule`
/// (`Terms` for `accept.txt`, `Avoid` for `reject.txt`) of Vale's built-in
/// style, so only for the files of the sections whose `BasedOnStyles`
/// names `Vale` (or that turn `Vale.Terms` / `Vale.Avoid` on), at the
/// level a section sets (Vale's own: `error`).
fn vocabulary_in_force(file: ImportedFile, ini: Option<&ValeIni>, rule: &str) -> ImportedFile {
    match ini {
        Some(ini) => in_force(file, ini, BUILTIN_STYLE, rule),
        None => file,
    }
}

/// The style and rule a style file is (`styles/<Style>/<Rule>.yml`).
fn style_rule<'a>(ini: &ValeIni, path: &'a str) -> (&'a str, &'a str) {
    let inner = ini
        .styles_path
        .as_deref()
        .and_then(|s| path.strip_prefix(s))
        .map_or(path, |p| p.trim_start_matches('/'));
    let style = inner.split('/').next().unwrap_or("");
    let rule = inner
        .rsplit('/')
        .next()
        .and_then(|n| n.rsplit_once('.'))
        .map_or("", |(stem, _)| stem);
    (style, rule)
}

/// The rules of `style.rule` as `.vale.ini` puts them in force, as Vale
/// decides it ([`ValeIni::enabled`]): for the files its sections select
/// (the last section matching a file decides), at the level `.vale.ini`
/// sets (or the file's), and not below `MinAlertLevel`. What is left out
/// is said, with its reason.
fn in_force(file: ImportedFile, ini: &ValeIni, style: &str, rule: &str) -> ImportedFile {
    let mut out = ImportedFile {
        rules: Vec::new(),
        skipped: file.skipped,
    };
    let mut nowhere = false;
    for r in file.rules {
        let own = r.level.unwrap_or(Level::Warning);
        let (level, paths) = match ini.enabled(style, rule, own) {
            Enabled::Everywhere(level) => (level, Vec::new()),
            Enabled::Paths(paths, level) => (level, paths),
            Enabled::Nowhere => {
                nowhere = true;
                continue;
            }
        };
        if level < ini.min_level {
            out.skipped.push((
                r.line,
                format!(
                    "{style}.{rule} at level {} is below MinAlertLevel {}; Vale does not report it",
                    level.as_str(),
                    ini.min_level.as_str()
                ),
            ));
            continue;
        }
        let mut copy = r;
        copy.level = Some(level);
        copy.status = level.status();
        copy.paths = paths;
        out.rules.push(copy);
    }
    if nowhere {
        out.skipped.push((
            1,
            format!(
                "{style}.{rule}: no section of .vale.ini enables the style {style:?} (BasedOnStyles) or the rule; Vale does not apply it"
            ),
        ));
    }
    out
}

fn entries(parsed: &ImportedFile) -> Vec<TermEntry> {
    let mut out = Vec::new();
    for rule in &parsed.rules {
        let preferred = rule
            .preferred
            .as_ref()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty());
        let mut avoid: Vec<String> = rule
            .avoided
            .iter()
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty() && Some(a) != preferred.as_ref())
            .collect();
        let pattern = rule
            .pattern
            .as_ref()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty());
        if avoid.is_empty()
            && pattern.is_none()
            && let Some(p) = &preferred
        {
            // An accepted term (Vale.Terms): its other capitalisations are avoided, as written.
            let title: String = p
                .chars()
                .take(1)
                .flat_map(char::to_uppercase)
                .chain(p.chars().skip(1).flat_map(char::to_lowercase))
                .collect();
            for variant in [p.to_lowercase(), p.to_uppercase(), title] {
                if &variant != p && !avoid.contains(&variant) {
                    avoid.push(variant);
                }
            }
        }
        avoid.dedup();
        if avoid.is_empty() && pattern.is_none() {
            continue;
        }
        out.push(TermEntry {
            preferred,
            avoid,
            pattern,
            level: rule.level.map(|l| l.as_str().to_owned()),
            paths: rule.paths.clone(),
            advisory: rule.status == RuleStatus::Advisory,
            suggested: matches!(rule.status, RuleStatus::Suggested | RuleStatus::Contested),
            exact: rule.exact,
            bounds: rule.bounds,
            raw: rule.raw,
        });
    }
    out
}

/// The SHA-256 of the latest import of each path.
fn imported_digests(ledger: &Ledger) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (record, _) in ledger.iter() {
        if record.kind != Kind::Import {
            continue;
        }
        if let Some(e) = record.evidence.first()
            && let (Some(path), Some(sha)) = (&e.path, &e.sha256)
        {
            out.insert(path.clone(), sha.clone());
        }
    }
    out
}

/// Context files of the checkout that no import ever read.
pub fn never_imported(session: &Session, ledger: &Ledger) -> Result<Vec<String>, ContextError> {
    let seen = imported_digests(ledger);
    let files = context_files(&session.root, &session.config.context)?;
    Ok(files
        .into_iter()
        .map(|f| f.path)
        .filter(|p| !seen.contains_key(p))
        .collect())
}

/// What importing a checkout's context files did: each file's outcome,
/// and what the door recorded (the rules files it refreshed).
pub type ImportedFiles = (Vec<(ContextFile, ImportOutcome)>, Recorded);

/// Import every context file of the checkout (`force`: even unchanged ones).
pub fn import_context_files(session: &Session, force: bool) -> Result<ImportedFiles, ContextError> {
    session.permits(Kind::Import)?;
    let files = context_files(&session.root, &session.config.context)?;
    let ini = vale_ini(&session.root)?;
    // The imports and their digests are in the reader's view, which the
    // door admits the new imports over too.
    let ledger = session.rules_ledger()?;
    let digests = imported_digests(&ledger);
    let mut outcomes = Vec::new();
    let mut records: Vec<(usize, Draft)> = Vec::new();
    for file in files {
        let bytes = match read_capped(&session.root.join(&file.path)) {
            Ok(b) => b,
            Err(e) => {
                outcomes.push((file, ImportOutcome::Failed { message: e }));
                continue;
            }
        };
        let sha = crate::digest::sha256_hex(&bytes);
        if !force && digests.get(&file.path) == Some(&sha) {
            outcomes.push((file, ImportOutcome::Unchanged));
            continue;
        }
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => {
                let message = format!("{} is not UTF-8 text", file.path);
                outcomes.push((file, ImportOutcome::Failed { message }));
                continue;
            }
        };
        let parsed = match parse(&file, &text, ini.as_ref()) {
            Ok(p) => p,
            Err(message) if file.kind == ContextFileKind::ValeSubstitution => {
                outcomes.push((file, ImportOutcome::Refused { message }));
                continue;
            }
            Err(message) => {
                outcomes.push((file, ImportOutcome::Failed { message }));
                continue;
            }
        };
        let point = match &file.profile {
            Some(name) if !super::points::is_profile_name(name) => {
                let message = format!(
                    "{}: `{name}` cannot name a profile (letters, digits, `.`, `_` and `-`, at most 64); rename its folder under {}/",
                    file.path,
                    super::points::PROFILES_DIR
                );
                outcomes.push((file, ImportOutcome::Failed { message }));
                continue;
            }
            Some(name) => [(super::points::PROFILE_AXIS.to_owned(), name.clone())].into(),
            None => Default::default(),
        };
        let terms = entries(&parsed);
        if terms.len() > MAX_TERMS {
            // Refused before anything is written: nothing of it is journaled.
            let message = format!(
                "{} holds {} term rules, over the {MAX_TERMS} one import may carry (docs/operations.md, \"Limits\"); split it into several term lists",
                file.path,
                terms.len()
            );
            outcomes.push((file, ImportOutcome::Failed { message }));
            continue;
        }
        let note = format!(
            "imported {} from {}",
            crate::wording::count(terms.len(), "term rule", "term rules"),
            file.path
        );
        let evidence = vec![Evidence {
            path: Some(file.path.clone()),
            unit: None,
            quote: None,
            sha256: Some(sha),
        }];
        let count = terms.len();
        let draft = Draft::from(Drafted::Import {
            subject: Some(Subject::Terms { terms, blob: None }),
            scope: Scope {
                point,
                ..Scope::default()
            },
            evidence,
        })
        .noting(Some(note));
        records.push((outcomes.len(), draft));
        outcomes.push((
            file,
            ImportOutcome::Imported {
                id: String::new(),
                rules: count,
                skipped: parsed.skipped,
            },
        ));
    }
    let (slots, drafts): (Vec<usize>, Vec<Draft>) = records.into_iter().unzip();
    let recorded = session.record(drafts, Some(&ledger))?;
    session.release(ledger);
    for (slot, record) in slots.into_iter().zip(&recorded.records) {
        if let ImportOutcome::Imported { id, .. } = &mut outcomes[slot].1 {
            *id = record.id.to_string();
        }
    }
    Ok((outcomes, recorded))
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("{} is larger than 16 MiB", path.display()));
    }
    Ok(bytes)
}

/// One rule of a disagreement between imported rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisagreeingRule {
    /// `<import id>:<n>`, the n-th rule of the import.
    pub id: RuleId,
    /// The file it was imported from.
    pub file: Option<String>,
    /// `"GitHub", not "Github"`.
    pub rule: String,
}

/// Two imported rules in force that disagree: both keep reporting (a file a
/// person imported stays in force as a whole), and a person settles it by
/// editing one file or switching a rule off in `.vale.ini`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    pub first: DisagreeingRule,
    pub second: DisagreeingRule,
}

impl Disagreement {
    /// Whether either side comes from one of these imports.
    pub fn involves(&self, ops: &[&str]) -> bool {
        [&self.first, &self.second].iter().any(|r| {
            ops.iter()
                .any(|op| r.id.op().as_ref().map(OpId::as_str) == Some(op))
        })
    }
}

/// The imported rules in force now that disagree, in id order.
pub fn disagreements(
    session: &Session,
    ledger: &Ledger,
) -> Result<Vec<Disagreement>, ContextError> {
    Ok(disagreements_at(ledger, session.now_ms()? as i64))
}

/// The imported rules in force at `at` (Unix ms) that disagree, in id
/// order (the atlas page of a past instant reads them then).
pub fn disagreements_at(ledger: &Ledger, at: i64) -> Vec<Disagreement> {
    let pairs = ledger.imported_disagreements(Some(at));
    if pairs.is_empty() {
        return Vec::new();
    }
    let mut files: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    for (record, _) in ledger.iter() {
        if record.kind == Kind::Import {
            files.insert(
                &record.id,
                record.evidence.first().and_then(|e| e.path.as_deref()),
            );
        }
    }
    let side = |r: &crate::ops::rules::TermRule| DisagreeingRule {
        id: r.id.clone(),
        file: r
            .id
            .op()
            .and_then(|op| files.get(op.as_str()).copied().flatten())
            .map(str::to_owned),
        rule: describe(r.preferred.as_deref(), &r.avoided, r.pattern.as_deref()),
    };
    pairs
        .iter()
        .map(|(a, b)| Disagreement {
            first: side(a),
            second: side(b),
        })
        .collect()
}

/// A rule in words: `"GitHub", not "Github", "github"`.
fn describe(preferred: Option<&str>, avoided: &[String], pattern: Option<&str>) -> String {
    let mut not: Vec<String> = avoided.iter().map(|a| format!("\"{a}\"")).collect();
    if let Some(p) = pattern {
        not.push(format!("/{p}/"));
    }
    match preferred {
        Some(p) => format!("\"{p}\", not {}", not.join(", ")),
        None => format!("not {}", not.join(", ")),
    }
}
