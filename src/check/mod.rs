//! The checker: which files are prose, what in them is prose, and which
//! avoided forms of the rules in force they write.
//!
//! The command obtains the rules for each file, builds one [`Matcher`] per
//! distinct rule set, and hands the files to [`check_files`], which reads
//! and checks them in parallel.

pub mod asciidoc;
pub mod case;
pub mod files;
pub mod finding;
pub mod fix;
pub mod format;
pub mod ignores;
pub mod markdown;
pub mod matcher;
mod packed;
pub mod prose;
pub mod rst;
pub mod rule;
mod select;
pub mod table;
pub mod usage;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

pub use files::{FileRef, Formats, Skip};
pub use finding::{Finding, Severity, Summary};
pub use matcher::{Matcher, MatcherError};
pub(crate) use rule::TermRule;

/// Something the user should know that is not a finding (a skipped file, a
/// configuration note). Warnings affect neither the score nor the exit code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub message: String,
}

/// The result of checking a set of files.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Sorted by path, line, column.
    pub findings: Vec<Finding>,
    pub warnings: Vec<Warning>,
    /// Files read and checked (skipped files are not counted).
    pub files: usize,
    /// With [`check_files_counting`]: uses of each rule's preferred and
    /// avoided forms over every file it was checked in, by rule id.
    pub usage: std::collections::BTreeMap<String, usage::Usage>,
    /// With [`check_files_to_fix`]: the text checked of each file with a
    /// finding `--fix` would rewrite ([`fix::fixable`]), in the order the
    /// files were listed.
    pub texts: Vec<Checked>,
}

/// A file's text as the check read it: what its findings' spans are of.
#[derive(Debug, Clone)]
pub struct Checked {
    pub path: String,
    /// Where it was read on disk (`None`: standard input or a blob).
    pub disk: Option<std::path::PathBuf>,
    pub text: String,
}

impl Outcome {
    pub fn summary(&self) -> Summary {
        Summary::of(self.files, &self.findings)
    }
}

/// Read and check `files`, each with its matcher, on up to `threads` threads.
pub fn check_files(files: &[(FileRef, Arc<Matcher>)], threads: usize) -> Outcome {
    run(files, None, threads, false)
}

/// [`check_files`], keeping the text of each file with a finding `--fix`
/// would rewrite ([`Outcome::texts`]), so the fix is made to the text the
/// findings were found in.
pub fn check_files_to_fix(files: &[(FileRef, Arc<Matcher>)], threads: usize) -> Outcome {
    run(files, None, threads, true)
}

/// [`check_files`], also counting each rule's uses in the same pass (for
/// the usage signals a whole-project check records).
/// `counters[i]` counts usage in `files[i]` (built with [`Matcher::for_usage`]).
pub fn check_files_counting(
    files: &[(FileRef, Arc<Matcher>)],
    counters: &[Arc<Matcher>],
    threads: usize,
) -> Outcome {
    run(files, Some(counters), threads, false)
}

/// A file's findings and usage counts, and with `keep`, its text when a
/// finding is fixable.
type FileResult = Result<(Vec<Finding>, Vec<usage::Usage>, Option<String>), Skip>;

fn run(
    files: &[(FileRef, Arc<Matcher>)],
    counters: Option<&[Arc<Matcher>]>,
    threads: usize,
    keep: bool,
) -> Outcome {
    let next = AtomicUsize::new(0);
    let threads = threads.clamp(1, files.len().max(1));
    let work = || {
        let mut out: Vec<(usize, FileResult)> = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((file, matcher)) = files.get(i) else {
                break;
            };
            let r = files::read(file).map(|text| {
                let masker = || ignores::Ignoring {
                    format: file.kind,
                    patterns: file.ignores.as_deref(),
                };
                let found = matcher.check(&file.path, &text, masker());
                let used = match counters {
                    Some(c) => usage::count(&c[i], &text, masker()),
                    None => Vec::new(),
                };
                let kept = (keep && found.iter().any(fix::fixable)).then_some(text);
                (found, used, kept)
            });
            out.push((i, r));
        }
        out
    };
    let mut results: Vec<(usize, FileResult)> = if threads == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    results.sort_by_key(|r| r.0);
    let mut outcome = Outcome::default();
    for (i, r) in results {
        match r {
            Ok((found, used, kept)) => {
                outcome.files += 1;
                if let Some(text) = kept {
                    outcome.texts.push(Checked {
                        path: files[i].0.path.clone(),
                        disk: match &files[i].0.source {
                            files::Source::Disk(p) => Some(p.clone()),
                            _ => None,
                        },
                        text,
                    });
                }
                outcome.findings.extend(found);
                let counted = counters.map_or(&[][..], |c| c[i].rules());
                for (rule, u) in counted.iter().zip(used) {
                    let total = outcome.usage.entry(rule.id.to_string()).or_default();
                    total.preferred += u.preferred;
                    total.avoided += u.avoided;
                }
            }
            Err(skip) => outcome.warnings.push(Warning {
                path: Some(files[i].0.path.clone()),
                message: skip.to_string(),
            }),
        }
    }
    let order = |a: &Finding, b: &Finding| {
        (&a.path, a.line, a.column, &a.rule).cmp(&(&b.path, b.line, b.column, &b.rule))
    };
    outcome.findings.sort_by(order);
    // An occurrence several rules find is reported once, naming them all.
    outcome.findings = finding::one_per_occurrence(std::mem::take(&mut outcome.findings));
    outcome.findings.sort_by(order);
    outcome
}
