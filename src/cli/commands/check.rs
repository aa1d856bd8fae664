//! `kapi check`: enforce established term rules, advise suggestions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Ctx;
use crate::check::files::{self, FilesError, ProseFilter, Worktree};
use crate::check::format::{github, human, json, sarif};
use crate::check::{CheckRule, FileRef, Matcher, Warning, check_files, check_files_counting};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::config::Config;
use crate::context::{PointMap, Session};
use crate::formats::{self, RuleStatus};
use crate::git::Repo;
use crate::ops::Ledger;
use crate::ops::record::Scope;

/// Check prose against the rules in force: established rules fail,
/// suggestions only advise.
///
/// Without PATHS, checks the project's prose files: tracked files and
/// untracked files git does not ignore, whose paths match the `[check]`
/// `prose` globs of kapi.toml (default: Markdown and .txt files). Markdown
/// code, front matter, URLs, link targets and HTML comments are not prose;
/// `<!-- kapi off -->` ... `<!-- kapi on -->` switches checking off for a
/// passage (`<!-- kapi off: Quickcast -->` for one rule).
///
/// Exit status: 0 when nothing fails, 1 when a finding fails, 2 for usage or
/// configuration errors, 5 when the repository cannot be read.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or folders to check; a folder means its prose files.
    #[arg(value_name = "PATHS")]
    pub paths: Vec<PathBuf>,

    /// Check what is staged (the index's blobs), not the working tree.
    #[arg(long)]
    pub staged: bool,

    /// How to write the findings.
    #[arg(long, value_enum, default_value_t = FormatArg::Human)]
    pub format: FormatArg,

    /// Also check against a term list, with or without the log: lines of
    /// `id<TAB>status<TAB>preferred<TAB>avoided|avoided`, `#` comments;
    /// status is established, suggested, contested or advisory. Repeatable.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// For people, in rustc's style.
    Human,
    /// One JSON document (docs/check.md).
    Json,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
    /// GitHub Actions annotations.
    Github,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    // One discovery of the repository and one reading of kapi.toml serve the
    // file listing, the prose filter and the log.
    let session = ctx.session_if_in_work_tree()?;
    let root = session.as_ref().map(|s| s.root.clone());
    let default_config = Config::default();
    let config = session.as_ref().map_or(&default_config, |s| &s.config);
    let filter = ProseFilter::new(&config.check)
        .map_err(files_error)?
        .with_vale_styles(root.as_deref());

    // The log: rules in force now, each with the scope it holds in.
    let ledger = session.as_ref().map(|s| s.ledger()).transpose()?;
    let mut rules: Vec<(CheckRule, Option<Scope>)> = match (&session, &ledger) {
        (Some(session), Some(ledger)) => rules_from_log(session, ledger),
        _ => Vec::new(),
    };
    for file in &args.rules {
        rules.extend(
            rules_from_term_list(&ctx.cwd, file)?
                .into_iter()
                .map(|r| (r, None)),
        );
    }
    let mut warnings = Vec::new();
    if rules.is_empty() {
        warnings.push(Warning {
            path: None,
            message:
                "no rules are in force: record one with `kapi context note`, or pass --rules FILE"
                    .into(),
        });
    }
    if let (Some(session), Some(ledger)) = (&session, &ledger) {
        match crate::context::never_imported(session, ledger) {
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

    let points = match &session {
        Some(s) => PointMap::from_config(&s.config.points)
            .map_err(|e| CliError::usage(format!("kapi.toml: {e}")))?,
        None => PointMap::default(),
    };
    let whole_project = args.paths.is_empty() && !args.staged;
    let repo = session.as_ref().map(|s| s.store.git());
    let files = list_files(&args, ctx, repo, &filter)?;
    // Usage counts need every preferred form in the automaton (a plain
    // matcher leaves out those that cannot change a finding).
    let mut book = RuleBook::new(rules, points, whole_project && session.is_some());
    let mut work = Vec::with_capacity(files.len());
    let mut counters = Vec::new();
    for file in files {
        let (matcher, counter) = book.matchers_for(&file.path)?;
        work.push((file, matcher));
        counters.extend(counter);
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let mut outcome = if counters.len() == work.len() && !work.is_empty() {
        check_files_counting(&work, &counters, threads)
    } else {
        check_files(&work, threads)
    };
    warnings.append(&mut outcome.warnings);
    outcome.warnings = warnings;
    if whole_project && let (Some(session), Some(ledger)) = (&session, &ledger) {
        record_usage(session, ledger, &outcome.usage)?;
    }

    let text = match args.format {
        FormatArg::Human => human::render(&outcome),
        FormatArg::Json => json::render(&outcome),
        FormatArg::Sarif => sarif::render(&outcome),
        FormatArg::Github => github::render(&outcome),
    };
    let mut out = Out::new();
    out.raw(text.as_bytes())?;
    out.flush()?;
    // The process ends now: freeing a large log costs more than it returns.
    std::mem::forget(ledger);
    Ok(if outcome.summary().failing > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

fn files_error(e: FilesError) -> CliError {
    match e {
        FilesError::Git(_) => CliError::store(e.to_string()),
        FilesError::Glob { .. } | FilesError::Missing(_) => CliError::usage(e.to_string()),
    }
}

fn list_files(
    args: &Args,
    ctx: &Ctx,
    repo: Option<&Repo>,
    filter: &ProseFilter,
) -> Result<Vec<FileRef>, CliError> {
    let wt = repo.map(|r| r as &dyn Worktree);
    if args.staged {
        let wt = wt.ok_or_else(|| CliError::usage("--staged needs a git repository"))?;
        let only = args
            .paths
            .iter()
            .map(|p| repo_relative(wt.root(), &ctx.cwd.join(p)))
            .collect::<Result<Vec<_>, _>>()?;
        return files::staged(wt, filter, &only).map_err(files_error);
    }
    if !args.paths.is_empty() {
        return files::named(wt, &ctx.cwd, &args.paths, filter).map_err(files_error);
    }
    let wt = wt.ok_or_else(|| {
        CliError::usage(
            "not inside a git repository: name the files or folders to check (kapi check PATHS...)",
        )
    })?;
    files::project_files(wt, filter).map_err(files_error)
}

/// `abs` relative to the repository root, with forward slashes; the
/// directory part is resolved so `./` and `..` work.
fn repo_relative(root: &Path, abs: &Path) -> Result<String, CliError> {
    let root = root
        .canonicalize()
        .map_err(|e| CliError::store(format!("{}: {e}", root.display())))?;
    let (dir, name) = match abs.canonicalize() {
        Ok(a) => (a, None),
        // A path deleted from the work tree may still be staged.
        Err(_) => {
            let parent = abs.parent().unwrap_or(abs);
            let dir = parent
                .canonicalize()
                .map_err(|_| FilesError::Missing(abs.to_path_buf()))
                .map_err(files_error)?;
            (
                dir,
                abs.file_name().map(|n| n.to_string_lossy().into_owned()),
            )
        }
    };
    let rel = dir
        .strip_prefix(&root)
        .map_err(|_| CliError::usage(format!("{} is outside the repository", abs.display())))?;
    let mut s = rel.to_string_lossy().replace('\\', "/");
    if let Some(n) = name {
        if !s.is_empty() {
            s.push('/');
        }
        s.push_str(&n);
    }
    Ok(s)
}

/// The rules the log holds in force.
/// The rules the log holds in force now, each with its scope (applied per
/// file in `RuleBook::rules_for`).
fn rules_from_log(session: &Session, ledger: &Ledger) -> Vec<(CheckRule, Option<Scope>)> {
    ledger
        .term_rules(None, Some(session.now_ms as i64))
        .into_iter()
        .map(|r| {
            let rule = CheckRule {
                id: r.id,
                preferred: r.preferred.unwrap_or_default(),
                avoided: r.avoided,
                suggested: r.suggested,
                advisory: r.advisory,
                exact: r.exact,
            };
            (rule, Some(r.scope))
        })
        .collect()
}

/// Record, for each rule of the log (not of an imported file) the check
/// counted, a usage signal when its counts differ from the latest recorded.
fn record_usage(
    session: &Session,
    ledger: &Ledger,
    usage: &std::collections::BTreeMap<String, crate::check::usage::Usage>,
) -> Result<(), CliError> {
    use crate::ops::record::{ActorKind, Kind, Signal, SignalSource};
    let mut signals = Vec::new();
    for (id, used) in usage {
        let Some(state) = ledger.state(id) else {
            continue;
        };
        let counts = (used.preferred as u64, used.avoided as u64);
        if state.standing.usage == Some(counts)
            || (state.standing.usage.is_none() && counts == (0, 0))
        {
            continue;
        }
        let mut record = session.record(Kind::Signal);
        record.actor = crate::ops::Actor {
            kind: ActorKind::Tool,
            name: "check".into(),
            session: None,
        };
        record.target = Some(id.clone());
        record.signal = Some(Box::new(Signal {
            source: SignalSource::Usage,
            preferred: counts.0,
            avoided: counts.1,
            commit: None,
            pr: None,
            merger: None,
        }));
        crate::ops::policy::person_decides(&crate::ops::policy::Transition {
            actor: &record.actor,
            kind: record.kind,
            target: ledger.get(id),
            widening: false,
            editing: false,
        })
        .map_err(crate::context::ContextError::from)?;
        signals.push(record);
    }
    session.append_all(signals)?;
    Ok(())
}

/// Rules from a term list named with `--rules` (relative to the directory
/// kapi runs in). Ids are `<file name>:<line>`.
fn rules_from_term_list(cwd: &Path, file: &Path) -> Result<Vec<CheckRule>, CliError> {
    let path = cwd.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CliError::usage(format!("cannot read the term list {}: {e}", file.display()))
    })?;
    let parsed = formats::parse_term_list(&text)
        .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?;
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(parsed
        .rules
        .into_iter()
        .map(|r| CheckRule {
            id: format!("{name}:{}", r.line),
            preferred: r.preferred.unwrap_or_default(),
            avoided: r.avoided,
            suggested: matches!(r.status, RuleStatus::Suggested | RuleStatus::Contested),
            advisory: r.status == RuleStatus::Advisory,
            exact: r.exact,
        })
        .collect())
}

/// Which rules hold for a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Selection {
    All,
    /// Indices into the rule book, ascending.
    Some(Vec<usize>),
}

/// Every rule once, and one matcher per distinct selection of them (most
/// files share one).
struct RuleBook {
    rules: Vec<CheckRule>,
    /// Where each rule holds; `None` for a term list's rules (everywhere).
    scopes: Vec<Option<Scope>>,
    points: PointMap,
    /// Also build matchers that count every preferred form (usage signals).
    counting: bool,
    matchers: HashMap<Selection, (Arc<Matcher>, Option<Arc<Matcher>>)>,
}

impl RuleBook {
    fn new(rules: Vec<(CheckRule, Option<Scope>)>, points: PointMap, counting: bool) -> Self {
        let (rules, scopes) = rules.into_iter().unzip();
        RuleBook {
            rules,
            scopes,
            points,
            counting,
            matchers: HashMap::new(),
        }
    }

    /// The rules that hold at `path` (repository-relative): those whose
    /// scope covers the file's point.
    fn rules_for(&self, path: &str) -> Selection {
        let point = self.points.point(path);
        let holding: Vec<usize> = self
            .scopes
            .iter()
            .enumerate()
            .filter(|(_, scope)| scope.as_ref().is_none_or(|s| s.covers(&point)))
            .map(|(i, _)| i)
            .collect();
        if holding.len() == self.rules.len() {
            Selection::All
        } else {
            Selection::Some(holding)
        }
    }

    /// The matcher for `path`, and with counting on, the matcher that counts
    /// usage (a plain matcher leaves out preferred forms that cannot change
    /// a finding).
    fn matchers_for(
        &mut self,
        path: &str,
    ) -> Result<(Arc<Matcher>, Option<Arc<Matcher>>), CliError> {
        let sel = self.rules_for(path);
        if let Some((m, u)) = self.matchers.get(&sel) {
            return Ok((Arc::clone(m), u.clone()));
        }
        let chosen: Vec<CheckRule> = match &sel {
            Selection::All => self.rules.clone(),
            Selection::Some(ix) => ix.iter().map(|&i| self.rules[i].clone()).collect(),
        };
        let internal = |e: crate::check::MatcherError| CliError::new(Exit::Internal, e.to_string());
        let m = Arc::new(Matcher::new(&chosen).map_err(internal)?);
        let u = if self.counting {
            Some(Arc::new(Matcher::for_usage(&chosen).map_err(internal)?))
        } else {
            None
        };
        self.matchers.insert(sel, (Arc::clone(&m), u.clone()));
        Ok((m, u))
    }
}
