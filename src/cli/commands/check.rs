//! `kapi check`: enforce established term rules, advise suggestions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Ctx;
use crate::check::files::{self, FilesError, ProseFilter};
use crate::check::format::{github, human, json, sarif};
use crate::check::{CheckRule, FileRef, Matcher, Warning, check_files};
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::config::Config;
use crate::contextfiles::{self, RuleStatus};

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
    let root = files::repo_root(&ctx.cwd);
    let config = match &root {
        Some(r) => Config::load(r).map_err(|e| CliError::usage(e.to_string()))?,
        None => Config::default(),
    };
    let filter = ProseFilter::new(&config.check).map_err(files_error)?;

    let mut rules = match &root {
        Some(r) => rules_from_log(ctx, r)?,
        None => Vec::new(),
    };
    for file in &args.rules {
        rules.extend(rules_from_term_list(&ctx.cwd, file)?);
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

    let files = list_files(&args, ctx, root.as_deref(), &filter)?;
    let mut book = RuleBook::new(rules);
    let mut work = Vec::with_capacity(files.len());
    for file in files {
        let matcher = book.matcher_for(&file.path)?;
        work.push((file, matcher));
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let mut outcome = check_files(&work, threads);
    warnings.append(&mut outcome.warnings);
    outcome.warnings = warnings;

    let text = match args.format {
        FormatArg::Human => human::render(&outcome),
        FormatArg::Json => json::render(&outcome),
        FormatArg::Sarif => sarif::render(&outcome),
        FormatArg::Github => github::render(&outcome),
    };
    let mut out = Out::new();
    out.raw(text.as_bytes())?;
    out.flush()?;
    Ok(if outcome.summary().failing > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

fn files_error(e: FilesError) -> CliError {
    match e {
        FilesError::Git { .. } => CliError::store(e.to_string()),
        FilesError::Glob { .. } | FilesError::Missing(_) => CliError::usage(e.to_string()),
    }
}

fn list_files(
    args: &Args,
    ctx: &Ctx,
    root: Option<&Path>,
    filter: &ProseFilter,
) -> Result<Vec<FileRef>, CliError> {
    if args.staged {
        let root = root.ok_or_else(|| CliError::usage("--staged needs a git repository"))?;
        let only = args
            .paths
            .iter()
            .map(|p| repo_relative(root, &ctx.cwd.join(p)))
            .collect::<Result<Vec<_>, _>>()?;
        return files::staged(root, filter, &only).map_err(files_error);
    }
    if !args.paths.is_empty() {
        return files::named(root, &ctx.cwd, &args.paths, filter).map_err(files_error);
    }
    let root = root.ok_or_else(|| {
        CliError::usage(
            "not inside a git repository: name the files or folders to check (kapi check PATHS...)",
        )
    })?;
    files::project_files(root, filter).map_err(files_error)
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
// wired by the log: the lead implements this against the fold; every rule
// in force, established or suggested (scope is applied per file in
// `RuleBook::rules_for`).
fn rules_from_log(_ctx: &Ctx, _repo_root: &Path) -> Result<Vec<CheckRule>, CliError> {
    Ok(Vec::new())
}

/// Rules from a term list named with `--rules` (relative to the directory
/// kapi runs in). Ids are `<file name>:<line>`.
fn rules_from_term_list(cwd: &Path, file: &Path) -> Result<Vec<CheckRule>, CliError> {
    let path = cwd.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CliError::usage(format!("cannot read the term list {}: {e}", file.display()))
    })?;
    let parsed = contextfiles::parse_term_list(&text)
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
        })
        .collect())
}

/// Which rules hold for a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Selection {
    All,
    /// Indices into the rule book, ascending.
    #[allow(dead_code, reason = "constructed once scope filtering is wired")]
    Some(Vec<usize>),
}

/// Every rule once, and one matcher per distinct selection of them (most
/// files share one).
struct RuleBook {
    rules: Vec<CheckRule>,
    matchers: HashMap<Selection, Arc<Matcher>>,
}

impl RuleBook {
    fn new(rules: Vec<CheckRule>) -> Self {
        RuleBook {
            rules,
            matchers: HashMap::new(),
        }
    }

    /// The rules that hold at `path` (repository-relative). Scope filtering
    /// (rules that hold at the file's point) plugs in here.
    fn rules_for(&self, _path: &str) -> Selection {
        Selection::All
    }

    fn matcher_for(&mut self, path: &str) -> Result<Arc<Matcher>, CliError> {
        let sel = self.rules_for(path);
        if let Some(m) = self.matchers.get(&sel) {
            return Ok(Arc::clone(m));
        }
        let chosen: Vec<CheckRule> = match &sel {
            Selection::All => self.rules.clone(),
            Selection::Some(ix) => ix.iter().map(|&i| self.rules[i].clone()).collect(),
        };
        let m = Arc::new(
            Matcher::new(&chosen).map_err(|e| CliError::new(Exit::Internal, e.to_string()))?,
        );
        self.matchers.insert(sel, Arc::clone(&m));
        Ok(m)
    }
}
