//! `kapi check`: enforce established term rules, advise suggestions.

use std::path::PathBuf;

use super::Ctx;
use crate::check::format::{github, human, json, sarif};
use crate::cli::exit::{CliError, Exit};
use crate::cli::global::Settings;
use crate::cli::output::{Out, detail};
use std::io::Read;

use crate::check::Outcome;
use crate::check::files::MAX_FILE_BYTES;
use crate::check::fix::Fixed;
use crate::check::format::diff;
use crate::check::format::json::Document;
use crate::cli::output::stderr_line;
use crate::context::check::{CheckReport, CheckRequest, RuleOrigin, Stdin, check};
use crate::context::fix::{FixMode, FixReport, fix};
use crate::wording;

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
/// `--fix` rewrites each avoided form of an established rule to its
/// preferred form, in prose only, and reports what remains; `--diff`
/// shows what it would write.
///
/// Exit status: 0 when nothing fails, 1 when a finding fails (`--diff`:
/// when there is something to fix), 2 for usage or configuration errors,
/// 5 when the repository cannot be read.
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

    /// Rewrite each avoided form of an established rule to the rule's
    /// preferred form, in prose only (never in code, front matter or link
    /// targets; never for suggestions or advisory rules), all files or
    /// none; then report what remains. With `-`: the fixed text goes to
    /// standard output, the report to standard error.
    #[arg(long)]
    pub fix: bool,

    /// Show what --fix would write, as a unified diff (`git apply` reads
    /// it), and write nothing; exit 1 when there is something to fix.
    #[arg(long)]
    pub diff: bool,

    /// With `-` as the path: check standard input as the file NAME (its
    /// kind by its extension, the rules that hold where it sits; it need
    /// not exist). Without it, standard input is `-`, read as Markdown.
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<PathBuf>,

    /// A debugging aid: print, one JSON line a file, the format each file
    /// is read as and the byte ranges of it that are prose, and check
    /// nothing (docs/check.md).
    #[arg(long, hide = true)]
    pub prose_dump: bool,
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
    refuse_combinations(&args)?;
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
        to_fix: false,
    };
    if args.prose_dump {
        let mut out = Out::new();
        for file in crate::context::check::prose_dump(session.as_ref(), &request)? {
            let line = serde_json::to_string(&file).unwrap_or_default();
            out.raw(line.as_bytes())?;
            out.raw(b"\n")?;
        }
        out.flush()?;
        return Ok(Exit::Ok);
    }
    let started = std::time::Instant::now();
    if args.fix || args.diff {
        let mode = if args.fix {
            FixMode::Write
        } else {
            FixMode::Diff
        };
        let fixed = fix(session.as_ref(), &request, mode)?;
        explain(&fixed.report, started.elapsed(), settings.verbose);
        return match mode {
            FixMode::Diff => show_diff(&fixed, &settings),
            FixMode::Write if request.stdin.is_some() => {
                fixed_stdin(&fixed, args.format, &settings)
            }
            FixMode::Write => fixed_files(&fixed, args.format, &settings),
        };
    }
    let report = check(session.as_ref(), &request)?;
    let elapsed = started.elapsed();
    explain(&report, elapsed, settings.verbose);
    let text = rendered(
        &report.outcome,
        args.format,
        human_style(&settings, settings.stdout_styled),
        None,
    );
    let mut out = Out::new();
    out.raw(text.as_bytes())?;
    out.flush()?;
    Ok(Exit::failed_if(report.failed()))
}

/// Flags that make no sense together, refused before anything is read.
fn refuse_combinations(args: &Args) -> Result<(), CliError> {
    if args.fix && args.diff {
        return Err(CliError::usage(
            "--diff shows what --fix would write and writes nothing: give one of them",
        ));
    }
    if args.diff && args.format != FormatArg::Human {
        return Err(CliError::usage(
            "--diff prints a unified diff, not findings: drop --format (or use --fix --format ...)",
        ));
    }
    Ok(())
}

/// How people's findings are drawn: `styled` for the stream they go to,
/// only the failing ones under `-q`.
fn human_style(settings: &Settings, styled: bool) -> human::Style {
    human::Style {
        styled,
        failing_only: settings.quiet,
    }
}

/// The findings of a report in `format`; with `fixed`, the JSON document
/// says what `--fix` fixed.
fn rendered(
    outcome: &Outcome,
    format: FormatArg,
    style: human::Style,
    fixed: Option<Vec<Fixed>>,
) -> String {
    match format {
        FormatArg::Human => human::render_with(outcome, style),
        FormatArg::Json => match fixed {
            Some(f) => json::render_document(&Document::of(outcome).with_fixed(f)),
            None => json::render(outcome),
        },
        FormatArg::Sarif => sarif::render(outcome),
        FormatArg::Github => github::render(outcome),
    }
}

/// What was fixed, one line a file (`fixed 2 findings in docs/a.md`), and
/// what was left; `verb` is `fixed` or `would fix`. None under `-q`.
fn fixed_lines(fixed: &FixReport, verb: &str, settings: &Settings) -> Vec<String> {
    let mut lines = Vec::new();
    if settings.quiet {
        return lines;
    }
    for f in &fixed.files {
        let f = &f.fixed;
        if f.fixes > 0 {
            lines.push(format!(
                "{verb} {} in {}",
                wording::count(f.fixes, "finding", "findings"),
                f.path
            ));
        }
        if f.left > 0 {
            lines.push(format!(
                "left {} in {} unfixed: {} overlaps another fix, or rules disagree on the form to write",
                wording::count(f.left, "finding", "findings"),
                f.path,
                wording::noun(f.left, "it", "each"),
            ));
        }
    }
    if fixed.fixes() == 0 && lines.is_empty() {
        lines.push("nothing to fix".into());
    }
    lines
}

/// `--diff`: the diff on stdout (exact into a pipe, so `git apply` reads
/// it; escaped, and coloured as the settings say, on a terminal), what it
/// would fix on stderr; exit 1 when there is something to fix.
fn show_diff(fixed: &FixReport, settings: &Settings) -> Result<Exit, CliError> {
    use std::io::IsTerminal;
    let text = diff::render(
        fixed
            .files
            .iter()
            .map(|f| (f.fixed.path.as_str(), f.before.as_str(), f.after.as_str())),
    );
    let mut out = Out::new();
    if std::io::stdout().is_terminal() {
        out.raw(diff::for_terminal(&text, settings.stdout_styled).as_bytes())?;
    } else {
        out.raw(text.as_bytes())?;
    }
    out.flush()?;
    for line in fixed_lines(fixed, "would fix", settings) {
        stderr_line(line);
    }
    Ok(Exit::failed_if(fixed.fixes() > 0))
}

/// `--fix` on files: what was fixed, then the check of what remains
/// (for people on stdout; beside a document, on stderr, so stdout stays
/// one document).
fn fixed_files(
    fixed: &FixReport,
    format: FormatArg,
    settings: &Settings,
) -> Result<Exit, CliError> {
    let mut lines = fixed_lines(fixed, "fixed", settings);
    if let Some(applied) = &fixed.applied {
        let n = applied.signals.len();
        if n > 0 && !settings.quiet {
            lines.push(format!(
                "recorded {}: the fixes write the preferred form of {}",
                wording::count(n, "applied signal", "applied signals"),
                wording::count(n, "suggestion", "suggestions"),
            ));
        }
        if let Some(e) = &applied.unrecorded {
            stderr_line(format!(
                "warning: the files were written, but their applied signals were not recorded: {e}"
            ));
        }
    }
    let mut out = Out::new();
    if format == FormatArg::Human {
        for line in &lines {
            out.line(line)?;
        }
    } else {
        for line in &lines {
            stderr_line(line);
        }
    }
    let text = rendered(
        &fixed.report.outcome,
        format,
        human_style(settings, settings.stdout_styled),
        Some(fixed.fixed()),
    );
    out.raw(text.as_bytes())?;
    out.flush()?;
    Ok(Exit::failed_if(fixed.report.failed()))
}

/// `--fix` on standard input: the fixed text on stdout, as a formatter
/// writes it; what was fixed and the check of what remains on stderr.
fn fixed_stdin(
    fixed: &FixReport,
    format: FormatArg,
    settings: &Settings,
) -> Result<Exit, CliError> {
    use std::io::Write;
    let mut out = Out::new();
    out.raw(fixed.input.as_deref().unwrap_or_default())?;
    out.flush()?;
    for line in fixed_lines(fixed, "fixed", settings) {
        stderr_line(line);
    }
    let text = rendered(
        &fixed.report.outcome,
        format,
        human_style(settings, settings.stderr_styled),
        Some(fixed.fixed()),
    );
    // As `stderr_line`: a failure to write to stderr has nowhere to go.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    Ok(Exit::failed_if(fixed.report.failed()))
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
