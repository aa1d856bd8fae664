//! `kapi check` as a use case: the rules in force (from the log and from
//! term lists), the files to check, one matcher per distinct selection of
//! rules, the check itself, and the usage signals a whole-project check
//! records (as the Tool `check`, asked of the policy like every operation).
//! A pre-commit hook, an agent's stop hook and the command line call this
//! one function and get the same report.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::{ContextError, PointMap, Session};
use crate::check::files::{self, FilesError, ProseFilter};
use crate::check::format::json::Document;
use crate::check::table::{RuleTable, TermList};
use crate::check::usage::Usage;
use crate::check::{
    FileRef, Matcher, MatcherError, Outcome, Warning, check_files, check_files_counting,
    check_files_to_fix,
};
use crate::config::Config;
use crate::ops::record::{Actor, Signal, SignalSource};
use crate::ops::{Draft, Drafted, OpId};
use crate::ops::{Ledger, RuleId, TermRule};

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct CheckRequest {
    /// The directory kapi runs in: PATHS and term lists are relative to it.
    pub cwd: PathBuf,
    /// Files or folders; none means the whole project.
    pub paths: Vec<PathBuf>,
    /// Check the index's blobs, not the working tree.
    pub staged: bool,
    /// Term lists to check against too (`--rules`).
    pub extra_rules: Vec<PathBuf>,
    /// Record usage signals when the whole project is checked.
    pub record_usage: bool,
    /// Check against the log as it stood at this instant (Unix ms), with
    /// windows read at it; usage is then never recorded. `None`: now.
    pub as_of: Option<u64>,
    /// Check this text (standard input) instead of files, as the file
    /// named (`None`: `-`, read as Markdown).
    pub stdin: Option<Stdin>,
    /// Keep the text of each file with a finding `--fix` would rewrite
    /// ([`Outcome::texts`]); usage is then never counted (`context::fix`
    /// counts it in the check after the fix).
    pub to_fix: bool,
    /// Keep each rule applied in [`CheckReport::sources`] (`kapi check
    /// -vv`); otherwise only their counts.
    pub list_rules: bool,
}

/// Text from standard input, checked as a file.
#[derive(Debug, Clone)]
pub struct Stdin {
    pub name: Option<PathBuf>,
    /// At most 16 MiB and one byte (one more says it was larger).
    pub bytes: Vec<u8>,
}

/// What a check found: the findings and warnings, and how many usage
/// signals it recorded. Serializes as the `--format json` document.
#[derive(Debug)]
pub struct CheckReport {
    pub outcome: Outcome,
    /// Usage signals recorded in the log.
    pub signals: usize,
    /// Where the rules applied came from, in order: this log, each
    /// repository sharing rules with the workspace, each term list.
    pub sources: Vec<RuleSource>,
}

/// Where some of the rules a check applied came from (`kapi check -v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleOrigin {
    /// This repository's log (`refs/kapi/ops`).
    Log,
    /// Another repository's log, shared with the workspace.
    Workspace {
        project: String,
        repository: PathBuf,
    },
    /// A term list named with `--rules`, as it was named.
    TermList(PathBuf),
}

/// How many rules one origin gave a check, and (when
/// [`CheckRequest::list_rules`] asked) the rules themselves.
#[derive(Debug, Clone)]
pub struct RuleSource {
    pub origin: RuleOrigin,
    pub count: usize,
    pub rules: Vec<TermRule>,
}

impl CheckReport {
    /// Whether a finding fails the check.
    pub fn failed(&self) -> bool {
        self.outcome.summary().failing > 0
    }
}

impl Serialize for CheckReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Document::of(&self.outcome).serialize(s)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(transparent)]
    Files(#[from] FilesError),
    /// A bug: an automaton over valid rules could not be built.
    #[error(transparent)]
    Matcher(#[from] MatcherError),
    #[error("cannot read the term list {}: {source}", file.display())]
    TermList {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", file.display())]
    TermListSyntax { file: PathBuf, message: String },
    #[error("kapi.toml: {0}")]
    Points(#[source] super::PointsError),
    /// Bad input the caller can fix; the message says how.
    #[error("{0}")]
    Usage(String),
    #[error("{}: {source}", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One file's prose as the check reads it ([`prose_dump`]).
#[derive(Debug, Serialize)]
pub struct ProseDump {
    pub path: String,
    /// The format it is read as (`markdown`, `asciidoc`, `rst`, `text`).
    pub format: &'static str,
    /// Byte ranges of the file that are prose ([`crate::check::prose::spans`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<(usize, usize)>,
    /// Why it was not read, if it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The prose spans of the files a check with `req` would read, each as
/// the check reads it: a debugging aid (`kapi check --prose-dump`), and
/// what `ci/bench-formats` compares with the reference renderers.
pub fn prose_dump(
    session: Option<&Session>,
    req: &CheckRequest,
) -> Result<Vec<ProseDump>, CheckError> {
    let root = session.map(|s| s.root.clone());
    let default_config = Config::default();
    let config = session.map_or(&default_config, |s| &s.config);
    let filter = ProseFilter::new(&config.check)?.with_vale_styles(root.as_deref());
    let repo = session.map(|s| s.store.git());
    let files = list_files(req, repo, &filter)?;
    Ok(files
        .iter()
        .map(|f| {
            let (spans, skipped) = match files::read(f) {
                Ok(text) => (
                    crate::check::prose::spans(&text, f.kind)
                        .into_iter()
                        .map(|r| (r.start, r.end))
                        .collect(),
                    None,
                ),
                Err(skip) => (Vec::new(), Some(skip.to_string())),
            };
            ProseDump {
                path: f.path.clone(),
                format: f.kind.name(),
                spans,
                skipped,
            }
        })
        .collect())
}

/// Check prose against the rules in force. `session` is `None` outside a
/// work tree: then only named files and term lists are checked.
pub fn check(session: Option<&Session>, req: &CheckRequest) -> Result<CheckReport, CheckError> {
    // One discovery of the repository and one reading of kapi.toml serve the
    // file listing, the prose filter and the log.
    let root = session.map(|s| s.root.clone());
    let default_config = Config::default();
    let config = session.map_or(&default_config, |s| &s.config);
    let filter = ProseFilter::new(&config.check)?.with_vale_styles(root.as_deref());

    // The log: rules in force now, each with the scope it holds in.
    let (ledger, unreadable) = match session {
        Some(s) => {
            let (ledger, unreadable) = s.rules_view(req.as_of)?;
            (Some(ledger), unreadable)
        }
        None => (None, 0),
    };
    let mut sources = WorkspaceSources::new();
    let rules: Vec<TermRule> = match (session, &ledger) {
        (Some(session), Some(ledger)) => {
            let at = match req.as_of {
                Some(at) => at,
                None => session.now_ms()?,
            };
            rules_at(session, ledger, at as i64, &mut sources)?
        }
        _ => Vec::new(),
    };
    let mut rule_sources = sources_of(&rules, &sources, req.list_rules);
    // The plans kept by earlier checks, which also say which term lists
    // were read whole without error before: read when a term list asks,
    // or a rule book is built (a long-running process's kept book needs
    // none).
    let open_plans =
        || session.and_then(|s| super::rules_cache::RulesCache::open(&s.store.kapi_dir()));
    let mut plans = (!req.extra_rules.is_empty()).then(open_plans).flatten();
    let mut lists = Vec::with_capacity(req.extra_rules.len());
    for file in &req.extra_rules {
        let list = term_list(&req.cwd, file, plans.as_mut())?;
        rule_sources.push(RuleSource {
            origin: RuleOrigin::TermList(file.clone()),
            count: list.len(),
            rules: if req.list_rules {
                list.rules()
            } else {
                Vec::new()
            },
        });
        lists.push(list);
    }
    let rules = RuleTable::new(rules, lists);
    let mut warnings = Vec::new();
    // A stored operation that cannot be read may hold a rule: the check
    // says so rather than pass as though the log held none.
    if unreadable > 0 {
        warnings.push(Warning {
            path: None,
            message: format!(
                "{} could not be read, so no rule {} holds is checked: `kapi store doctor` names {}",
                crate::wording::count(unreadable, "stored operation", "stored operations"),
                if unreadable == 1 { "it" } else { "they" },
                if unreadable == 1 { "it" } else { "them" },
            ),
        });
    }
    if rules.is_empty() {
        warnings.push(Warning {
            path: None,
            message:
                "no rules are in force: record one with `kapi context note --term <term> --instead-of <form> --quote <text>`, or pass --rules FILE"
                    .into(),
        });
    }
    if let (Some(session), Some(ledger)) = (session, &ledger) {
        match super::never_imported(session, ledger) {
            Ok(unread) if !unread.is_empty() => warnings.push(Warning {
                path: None,
                message: format!(
                    "{} context file{} never imported ({}): a person runs `kapi store import` to put them in force",
                    unread.len(),
                    if unread.len() == 1 { " was" } else { "s were" },
                    unread.join(", ")
                ),
            }),
            Ok(_) => {}
            // A broken [context] section is for `kapi store import` to refuse;
            // the check still runs.
            Err(e) => warnings.push(Warning { path: None, message: format!("context files: {e}") }),
        }
    }

    let points = match session {
        Some(s) => PointMap::from_config(&s.config.points).map_err(CheckError::Points)?,
        None => PointMap::default(),
    };
    let whole_project = req.paths.is_empty() && !req.staged && req.stdin.is_none();
    let repo = session.map(|s| s.store.git());
    let mut files = list_files(req, repo, &filter)?;
    // The TokenIgnores and BlockIgnores of .vale.ini's sections: what they
    // match in the files the sections name is not prose.
    if let Some(ini) = root.as_deref().and_then(vale_ini) {
        let (ignores, unread) = crate::check::ignores::ValeIgnores::new(&ini);
        warnings.extend(unread.into_iter().map(|message| Warning {
            path: None,
            message,
        }));
        for file in &mut files {
            file.ignores = ignores.for_path(&file.path);
        }
    }
    // Usage counts need every preferred form in the automaton (a plain
    // matcher leaves out those that cannot change a finding).
    let counting = whole_project
        && req.record_usage
        && !req.to_fix
        && req.as_of.is_none()
        && session.is_some();
    // A long-running process keeps the rule book, and the matchers it
    // built, for the next check with the same rules.
    let kept = session.and_then(|s| s.rule_book.take());
    let mut book = match kept {
        Some(book) if book.serves(&rules, counting) => book,
        _ => {
            let book = RuleBook::new(rules, points, counting);
            match session {
                Some(s) => book
                    .with_space(std::sync::Arc::clone(&s.space))
                    .with_plans(plans.take().or_else(open_plans)),
                None => book,
            }
        }
    };
    let mut work = Vec::with_capacity(files.len());
    let mut counters = Vec::new();
    for file in files {
        let (matcher, counter) = book.matchers_for(&file.path)?;
        work.push((file, matcher));
        counters.extend(counter);
    }
    book.save_plans();
    let mut outcome = if req.to_fix {
        check_files_to_fix(&work, threads())
    } else if counters.len() == work.len() && !work.is_empty() {
        check_files_counting(&work, &counters, threads())
    } else {
        check_files(&work, threads())
    };
    match session {
        Some(s) if !s.env().ends_with_call() => {
            s.rule_book.replace(Some(book));
        }
        // The process ends after this call: freeing thousands of rules'
        // forms and automata one by one would only delay its exit.
        Some(_) => {
            std::mem::forget(work);
            std::mem::forget(book);
        }
        None => {}
    }
    warnings.append(&mut outcome.warnings);
    outcome.warnings = warnings;
    for finding in &mut outcome.findings {
        if let Some((project, repository)) = sources.get(&finding.rule) {
            finding.workspace = Some(project.clone());
            finding.repository = Some(repository.clone());
        }
        // A failing finding names the signed decision that put its rule
        // in force.
        if let (true, Some(ledger)) = (finding.fails, &ledger)
            && let Some(id) = rule_id(&finding.rule)
            && let Some((decided, principal)) = super::here::signed_decision(ledger, &id)
        {
            finding.decision = Some(crate::check::finding::SignedDecision {
                id: decided.to_string(),
                signed_by: principal.to_owned(),
            });
        }
    }
    let mut signals = 0;
    if let (true, Some(session), Some(ledger)) = (counting, session, &ledger) {
        signals = record_usage(session, ledger, &outcome.usage)?;
    }
    if let (Some(session), Some(ledger)) = (session, ledger) {
        session.release(ledger);
    }
    Ok(CheckReport {
        outcome,
        signals,
        sources: rule_sources,
    })
}

/// The log's rules by origin: this repository's, then each workspace
/// repository's in the order they come (`sources` names the workspace
/// ones); none when the log gave none.
fn sources_of(rules: &[TermRule], sources: &WorkspaceSources, list: bool) -> Vec<RuleSource> {
    let mut out: Vec<RuleSource> = Vec::new();
    let mut add = |origin: RuleOrigin, rule: &TermRule| {
        let at = match out.iter().position(|s| s.origin == origin) {
            Some(at) => at,
            None => {
                out.push(RuleSource {
                    origin,
                    count: 0,
                    rules: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[at].count += 1;
        if list {
            out[at].rules.push(rule.clone());
        }
    };
    if sources.is_empty() && !list {
        if !rules.is_empty() {
            out.push(RuleSource {
                origin: RuleOrigin::Log,
                count: rules.len(),
                rules: Vec::new(),
            });
        }
        return out;
    }
    for rule in rules {
        let origin = match sources.get(&rule.id.to_string()) {
            Some((project, repository)) => RuleOrigin::Workspace {
                project: project.clone(),
                repository: repository.clone(),
            },
            None => RuleOrigin::Log,
        };
        add(origin, rule);
    }
    // This log's own first, whatever order the rules came in.
    out.sort_by_key(|s| s.origin != RuleOrigin::Log);
    out
}

/// Files are read and checked on up to 8 threads.
fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
}

fn list_files(
    req: &CheckRequest,
    repo: Option<&crate::git::Repo>,
    filter: &ProseFilter,
) -> Result<Vec<FileRef>, CheckError> {
    let wt = repo.map(|r| r as &dyn files::Worktree);
    if let Some(stdin) = &req.stdin {
        return Ok(vec![files::stdin_file(
            wt.map(|w| w.root()),
            &req.cwd,
            stdin.name.as_deref(),
            stdin.bytes.clone(),
            filter,
        )]);
    }
    if req.staged {
        let wt = wt.ok_or_else(|| CheckError::Usage("--staged needs a git repository".into()))?;
        let only = req
            .paths
            .iter()
            .map(|p| repo_relative(wt.root(), &req.cwd.join(p)))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(files::staged(wt, filter, &only)?);
    }
    if !req.paths.is_empty() {
        return Ok(files::named(wt, &req.cwd, &req.paths, filter)?);
    }
    let wt = wt.ok_or_else(|| match crate::git::Repo::discover(&req.cwd) {
        // A bare repository has no files to check.
        Ok(bare) => CheckError::Usage(format!(
            "{} is a bare repository: it has no work tree to check; run kapi check in a clone or a `git worktree`, or name the files or folders to check (kapi check PATHS...)",
            bare.git_dir().display()
        )),
        Err(_) => CheckError::Usage(
            "not inside a git repository: name the files or folders to check (kapi check PATHS...)"
                .into(),
        ),
    })?;
    Ok(files::project_files(wt, filter)?)
}

/// `abs` relative to the repository root, with forward slashes; the
/// directory part is resolved so `./` and `..` work.
fn repo_relative(root: &Path, abs: &Path) -> Result<String, CheckError> {
    let root = root.canonicalize().map_err(|source| CheckError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    let (dir, name) = match abs.canonicalize() {
        Ok(a) => (a, None),
        // A path deleted from the work tree may still be staged.
        Err(_) => {
            let parent = abs.parent().unwrap_or(abs);
            let dir = parent
                .canonicalize()
                .map_err(|_| FilesError::Missing(abs.to_path_buf()))?;
            (
                dir,
                abs.file_name().map(|n| n.to_string_lossy().into_owned()),
            )
        }
    };
    let rel = dir
        .strip_prefix(&root)
        .map_err(|_| CheckError::Usage(format!("{} is outside the repository", abs.display())))?;
    let mut s = rel.to_string_lossy().replace('\\', "/");
    if let Some(n) = name {
        if !s.is_empty() {
            s.push('/');
        }
        s.push_str(&n);
    }
    Ok(s)
}

/// Where each workspace rule a check applies came from, by rule id: the
/// project that decided it and the checkout whose log holds it.
type WorkspaceSources = HashMap<String, (String, PathBuf)>;

/// The rules the log holds in force at `at` (Unix ms), each with its scope
/// (applied per file in `RuleBook::rules_for`), and the rules other
/// repositories share with the workspace, unless a project rule speaks
/// for the same term (their sources noted in `sources`).
fn rules_at(
    session: &Session,
    ledger: &Ledger,
    at: i64,
    sources: &mut WorkspaceSources,
) -> Result<Vec<TermRule>, ContextError> {
    let at = Some(at);
    let project = ledger.term_rules(None, at);
    let workspace: Vec<TermRule> = super::workspace::rules_at(session, at)
        .into_iter()
        .filter(|w| !w.shadowed_by(&project))
        .inspect(|w| {
            sources.insert(w.id.to_string(), (w.project.clone(), w.repository.clone()));
        })
        .map(|w| TermRule {
            id: RuleId::Op(w.id),
            preferred: Some(w.preferred),
            avoided: w.avoid,
            suggested: w.status != crate::ops::Status::Established,
            status: w.status,
            advisory: w.advisory,
            exact: false,
            pattern: None,
            level: None,
            paths: Vec::new(),
            // A term rule of the log matches on word boundaries, as it
            // does in its own project.
            bounds: crate::ops::record::Bounds::Words,
            raw: false,
            scope: w.scope,
        })
        .collect();
    Ok(project.into_iter().chain(workspace).collect())
}

/// The actor usage signals are recorded as: the checker, whoever ran it.
pub fn checker() -> Actor {
    Actor::tool("check")
}

/// Record, for each rule of the log (not of an imported file) the check
/// counted, a usage signal when its counts differ from the latest
/// recorded; returns how many were recorded.
pub fn record_usage(
    session: &Session,
    ledger: &Ledger,
    usage: &BTreeMap<String, Usage>,
) -> Result<usize, ContextError> {
    let mut signals = Vec::new();
    for (id, used) in usage {
        let Some(state) = OpId::parse(id).ok().and_then(|id| ledger.state(&id)) else {
            continue;
        };
        let counts = (used.preferred as u64, used.avoided as u64);
        if state.standing.usage == Some(counts)
            || (state.standing.usage.is_none() && counts == (0, 0))
        {
            continue;
        }
        let Ok(target) = OpId::parse(id) else {
            continue;
        };
        signals.push(Draft::from(Drafted::Signal {
            target,
            signal: Signal {
                source: SignalSource::Usage,
                preferred: counts.0,
                avoided: counts.1,
                commit: None,
                pr: None,
                merger: None,
            },
        }));
    }
    Ok(session.record_as(&checker(), signals, Some(ledger))?.len())
}

/// Rules from a term list named with `--rules` (relative to `cwd`). Ids
/// are `<file name>:<line>`; they hold everywhere (the empty scope). A
/// list whose text a kept plan was derived from (`plans` knows it) is read
/// line by line as a check needs its rules; any other is read whole now,
/// and its first bad line is the error.
pub fn term_list(
    cwd: &Path,
    file: &Path,
    mut plans: Option<&mut super::rules_cache::RulesCache>,
) -> Result<Arc<TermList>, CheckError> {
    let failed = |source| CheckError::TermList {
        file: file.to_path_buf(),
        source,
    };
    let handle = std::fs::File::open(cwd.join(file)).map_err(failed)?;
    // The file as it is before its text is read: what `rules.seen`
    // records beside the text's hash, so a later check by the same file
    // does not hash it again.
    let meta = handle.metadata().ok();
    let identity = meta.as_ref().map(super::rules_cache::Identity::of);
    // Bytes: a list a kept plan knows is not decoded whole again.
    let len = meta.as_ref().map_or(0, |m| m.len());
    let text = crate::fsutil::read_sized(handle, len, TermList::MAX_BYTES)
        .map_err(failed)?
        .ok_or_else(|| {
            failed(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a term list is read up to 4 GiB; split it into several lists",
            ))
        })?;
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let hash = match plans.as_deref_mut() {
        Some(p) => p.list_hash(identity, &text),
        None => TermList::hash_of(&text),
    };
    // The lines a kept plan recorded (the list read whole then) are taken
    // when they lie within this text; else the list is read whole again.
    if let Some(lines) = plans
        .and_then(|p| p.known_lines(&hash))
        .filter(|lines| lines.within(text.len()))
    {
        return Ok(Arc::new(TermList::known(name, text, hash, lines)));
    }
    let text = String::from_utf8(text).map_err(|_| {
        failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })?;
    let list = TermList::parse(name, text, hash).map_err(|e| CheckError::TermListSyntax {
        file: file.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(Arc::new(list))
}

/// Which rules hold for a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selection {
    All,
    /// Indices into the rule book, ascending.
    Some(Vec<usize>),
}

/// A matcher, and with counting on, the matcher that counts usage.
type Matchers = (Arc<Matcher>, Option<Arc<Matcher>>);

/// Every rule once, and one matcher per distinct selection of them (most
/// files share one).
pub struct RuleBook {
    /// Each holds where its scope covers a file's point (a term list's
    /// rules: everywhere).
    rules: RuleTable,
    /// The files each rule holds for, by path (`None`: every file).
    globs: Vec<Option<crate::ops::PathGlobs>>,
    /// The rules that hold for some files only (a scope naming a point, or
    /// globs): the others are never looked at again per file (a check of
    /// a tree by 5,000 rules compared 6.6 million scopes).
    local: Vec<usize>,
    points: PointMap,
    /// The project's typed axes the scopes compare on.
    space: Option<Arc<crate::ops::axes::Space>>,
    /// Also build matchers that count every preferred form (usage signals).
    counting: bool,
    matchers: HashMap<Selection, Matchers>,
    /// The plans of matchers built before, by any process
    /// (`.git/kapi/rules.cache`); none outside a repository.
    plans: Option<super::rules_cache::RulesCache>,
}

impl RuleBook {
    /// A term list's rules hold everywhere: only the held ones are read
    /// for their scopes and paths.
    pub fn new(rules: RuleTable, points: PointMap, counting: bool) -> Self {
        let globs: Vec<Option<crate::ops::PathGlobs>> = rules
            .held()
            .iter()
            .map(|r| crate::ops::PathGlobs::new(&r.paths))
            .collect();
        let local = rules
            .held()
            .iter()
            .zip(&globs)
            .enumerate()
            .filter(|(_, (rule, globs))| !rule.scope.point.is_empty() || globs.is_some())
            .map(|(i, _)| i)
            .collect();
        RuleBook {
            rules,
            globs,
            local,
            points,
            space: None,
            counting,
            matchers: HashMap::new(),
            plans: None,
        }
    }

    /// Take the plans of matchers from `cache` and keep there those built
    /// ([`RuleBook::save_plans`]).
    pub fn with_plans(mut self, cache: Option<super::rules_cache::RulesCache>) -> Self {
        self.plans = cache;
        self
    }

    /// Write the plans of the matchers built since the last save.
    pub fn save_plans(&mut self) {
        if let Some(cache) = &mut self.plans {
            cache.save();
        }
    }

    /// Whether this book checks by `rules` as given, counting usage or
    /// not: then its matchers serve again. (Its points and axes are the
    /// project's, which a long-running process opens again when
    /// `kapi.toml` changes, and the book with it.)
    pub fn serves(&self, rules: &RuleTable, counting: bool) -> bool {
        self.counting == counting && self.rules == *rules
    }

    /// Compare scopes on the project's typed axes.
    pub fn with_space(mut self, space: Arc<crate::ops::axes::Space>) -> Self {
        self.space = Some(space);
        self.matchers.clear();
        self
    }

    /// The rules that hold at `path` (repository-relative): those whose
    /// scope covers the file's point.
    pub fn rules_for(&self, path: &str) -> Selection {
        if self.local.is_empty() {
            return Selection::All;
        }
        let point = self.points.point(path);
        let mut holds = vec![true; self.rules.len()];
        for &i in &self.local {
            holds[i] = self.rules[i].scope.covers_in(self.space.as_deref(), &point)
                && self.globs[i].as_ref().is_none_or(|g| g.is_match(path));
        }
        if holds.iter().all(|&h| h) {
            Selection::All
        } else {
            Selection::Some((0..holds.len()).filter(|&i| holds[i]).collect())
        }
    }

    /// The matcher for `path`, and with counting on, the matcher that counts
    /// usage (a plain matcher leaves out preferred forms that cannot change
    /// a finding).
    pub fn matchers_for(&mut self, path: &str) -> Result<Matchers, MatcherError> {
        let sel = self.rules_for(path);
        if let Some((m, u)) = self.matchers.get(&sel) {
            return Ok((Arc::clone(m), u.clone()));
        }
        let chosen: RuleTable = match &sel {
            Selection::All => self.rules.clone(),
            Selection::Some(ix) => ix
                .iter()
                .map(|&i| self.rules[i].clone())
                .collect::<Vec<_>>()
                .into(),
        };
        let mut none = crate::check::matcher::NoPlans;
        let plans: &mut dyn crate::check::matcher::Plans = match &mut self.plans {
            Some(cache) => cache,
            None => &mut none,
        };
        let (m, u) = if self.counting {
            let m = Matcher::with_plans(chosen.clone(), plans)?;
            (m, Some(Arc::new(Matcher::for_usage_with(chosen, plans)?)))
        } else {
            (Matcher::with_plans(chosen, plans)?, None)
        };
        let m = Arc::new(m);
        self.matchers.insert(sel, (Arc::clone(&m), u.clone()));
        Ok((m, u))
    }
}

/// The work tree's `.vale.ini`, when it has one kapi can read (a broken one
/// is for `kapi store import` to refuse).
fn vale_ini(root: &Path) -> Option<crate::formats::vale::ValeIni> {
    let path = root.join(".vale.ini");
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > 1024 * 1024 {
        return None;
    }
    crate::formats::vale::ValeIni::parse(&std::fs::read_to_string(path).ok()?).ok()
}

/// A finding's rule as the ledger names it (`<op id>` or `<op id>:<n>`);
/// `None` for a term list's rule.
fn rule_id(rule: &str) -> Option<crate::ops::RuleId> {
    let (op, n) = match rule.split_once(':') {
        Some((op, n)) => (op, Some(n.parse().ok()?)),
        None => (rule, None),
    };
    let op = crate::ops::OpId::parse(op).ok()?;
    Some(match n {
        Some(n) => crate::ops::RuleId::Imported(op, n),
        None => crate::ops::RuleId::Op(op),
    })
}
