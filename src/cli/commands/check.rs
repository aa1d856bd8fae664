//! `kapi check`: enforce established term rules, advise suggestions.

use std::path::PathBuf;

use super::Ctx;
use crate::check::format::{github, human, json, sarif};
use crate::cli::exit::{CliError, Exit};
use crate::cli::global::Settings;
use crate::cli::output::{Out, detail};
use std::io::Read;

use crate::check::files::MAX_FILE_BYTES;
use crate::context::check::{CheckReport, CheckRequest, RuleOrigin, Stdin, check};

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
    /// Files or folders to check; a folder means its prose files; `-`:
    /// standard input.
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

    /// Check against the log as it stood at this instant (RFC 3339) or at the end of
    /// this date (UTC), with rule windows read at it.
    #[arg(long, value_name = "WHEN", value_parser = crate::cli::commands::parse_as_of)]
    pub as_of: Option<u64>,

    /// With `-` as the path: check standard input as the file NAME (its
    /// kind by its extension, the rules that hold where it sits; it need
    /// not exist). Without it, standard input is `-`, read as Markdown.
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<PathBuf>,
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
    let settings = Settings::get();
    let stdin = stdin_of(&args)?;
    let session = ctx.session_if_in_work_tree()?;
    let request = CheckRequest {
        cwd: ctx.cwd.clone(),
        paths: if stdin.is_some() {
            Vec::new()
        } else {
            args.paths
        },
        staged: args.staged,
        extra_rules: args.rules,
        record_usage: true,
        as_of: args.as_of,
        stdin,
        list_rules: settings.verbose >= 2,
    };
    let started = std::time::Instant::now();
    let report = check(session.as_ref(), &request)?;
    let elapsed = started.elapsed();
    explain(&report, elapsed, settings.verbose);
    let text = match args.format {
        FormatArg::Human => human::render_with(
            &report.outcome,
            human::Style {
                styled: settings.stdout_styled,
                failing_only: settings.quiet,
            },
        ),
        FormatArg::Json => json::render(&report.outcome),
        FormatArg::Sarif => sarif::render(&report.outcome),
        FormatArg::Github => github::render(&report.outcome),
    };
    let mut out = Out::new();
    out.raw(text.as_bytes())?;
    out.flush()?;
    Ok(if report.failed() {
        Exit::Failed
    } else {
        Exit::Ok
    })
}

/// Standard input, when the one path is `-` (as Vale and typos read it):
/// at most 16 MiB and one byte is read, one more saying it was larger.
fn stdin_of(args: &Args) -> Result<Option<Stdin>, CliError> {
    let dash = args.paths.iter().any(|p| p.as_os_str() == "-");
    if !dash {
        return match args.stdin_filename {
            Some(_) => Err(CliError::usage(
                "--stdin-filename names standard input: give `-` as the path (kapi check - --stdin-filename NAME)",
            )),
            None => Ok(None),
        };
    }
    if args.paths.len() > 1 {
        return Err(CliError::usage(
            "`-` (standard input) is checked alone: name no other path with it",
        ));
    }
    if args.staged {
        return Err(CliError::usage(
            "`-` checks standard input, --staged the index: give one of them",
        ));
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
    Ok(Some(Stdin {
        name: args.stdin_filename.clone(),
        bytes,
    }))
}

/// `-v`: where the rules came from, how many files were checked and how
/// long it took, what was recorded; `-vv`: every rule, under its source.
/// On stderr, so the findings on stdout (in any format) stay as they are.
fn explain(report: &CheckReport, elapsed: std::time::Duration, verbose: u8) {
    if verbose == 0 {
        return;
    }
    for source in &report.sources {
        let from = match &source.origin {
            RuleOrigin::Log => "the log (refs/kapi/ops)".to_owned(),
            RuleOrigin::Workspace {
                project,
                repository,
            } => format!("the workspace: {project} at {}", repository.display()),
            RuleOrigin::TermList(path) => format!("the term list {}", path.display()),
        };
        detail(
            1,
            format!(
                "rules: {} from {from}",
                crate::wording::count(source.count, "rule", "rules")
            ),
        );
        for rule in &source.rules {
            detail(2, format!("  {}", rule_line(rule)));
        }
    }
    if report.sources.is_empty() {
        detail(1, "rules: none in force");
    }
    let files = report.outcome.files;
    detail(
        1,
        format!(
            "checked {} in {} ms",
            crate::wording::count(files, "file", "files"),
            elapsed.as_millis()
        ),
    );
    if report.signals > 0 {
        detail(
            1,
            format!(
                "recorded {} in refs/kapi/local",
                crate::wording::count(report.signals, "usage signal", "usage signals")
            ),
        );
    }
}

/// A rule as `-vv` lists it: `#0ttd83m01q "Quickcast", not "Quick cast",
/// "Quick-cast"`, a term list's as `terms.tsv:3 ...`; `(suggested)` or
/// `(advisory)` when it does not fail a check.
fn rule_line(rule: &crate::ops::TermRule) -> String {
    use crate::ops::RuleId;
    let name = match &rule.id {
        RuleId::Op(id) => format!("#{}", id.short()),
        RuleId::Imported(id, n) => format!("#{}:{n}", id.short()),
        RuleId::File(file, line) => format!("{file}:{line}"),
    };
    let avoided: Vec<String> = rule.avoided.iter().map(|a| format!("\"{a}\"")).collect();
    let what = match &rule.preferred {
        Some(p) => format!("\"{p}\", not {}", avoided.join(", ")),
        None => format!("avoid {}", avoided.join(", ")),
    };
    let how = if rule.suggested {
        " (suggested)"
    } else if rule.advisory {
        " (advisory)"
    } else {
        ""
    };
    format!("{name} {what}{how}")
}
