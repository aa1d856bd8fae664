//! The file formats kapi reads and writes, as pure functions over text, in
//! one home: kapi term lists (`termlist`), Vale vocabularies, substitution
//! styles and `.vale.ini` (`vale`), and the managed rules block of
//! `AGENTS.md` / `CLAUDE.md` (`rules_block`). `kapi store import` records
//! what the readers return, and `kapi check --rules FILE` checks against a
//! term list directly.
//!
//! Term lists and vocabularies are read line by line (a line longer than
//! [`MAX_LINE_BYTES`] is refused with its line number); Vale styles by a
//! YAML library ([`yaml`]); regular-expression keys by a regular-expression
//! parser ([`pattern`]), which lists a key's literal forms when there are at
//! most [`MAX_EXPANSION`] of them and keeps the rest as a pattern.

use crate::ops::record::Bounds;

pub mod allowed_signers;
pub(crate) mod pattern;
pub(crate) mod rules_block;
pub(crate) mod termlist;
pub mod vale;
pub(crate) mod yaml;

pub use termlist::parse_term_list;
pub use vale::{Vocabulary, parse_vale_substitution};

/// Longest line read.
pub(crate) const MAX_LINE_BYTES: usize = 4096;
/// Most literal forms one pattern may expand to.
pub(crate) const MAX_EXPANSION: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("not a Vale substitution style: {0}")]
    NotSubstitution(String),
}

pub(crate) fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError::Line {
        line,
        message: message.into(),
    }
}

/// How a term-list rule binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleStatus {
    #[default]
    Established,
    Suggested,
    Contested,
    Advisory,
}

impl RuleStatus {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "established" => Some(RuleStatus::Established),
            "suggested" => Some(RuleStatus::Suggested),
            "contested" => Some(RuleStatus::Contested),
            "advisory" => Some(RuleStatus::Advisory),
            _ => None,
        }
    }
}

/// One rule read from a context file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedRule {
    /// The form to use; `None` for a rejected term with no replacement.
    pub preferred: Option<String>,
    /// Forms to avoid, as literal text.
    pub avoided: Vec<String>,
    /// What of the rule stays a regular expression (a Vale key with
    /// look-around or unbounded repetition), checked as a pattern.
    pub pattern: Option<String>,
    /// How a match's edges must stand: Vale's rules as its expressions read
    /// `\b` (or anywhere, with `nonword: true`), term lists as whole words.
    pub bounds: Bounds,
    /// Matched in the file's raw text, markup and code included, not in
    /// its prose: a Vale rule with `scope: raw`.
    pub raw: bool,
    /// A Vale rule's alert level (its file's `level`, or what `.vale.ini`
    /// sets for it).
    pub level: Option<vale::Level>,
    /// Globs (repository-relative) of the files the rule holds for; empty
    /// for every file. From the `.vale.ini` sections enabling a Vale style.
    pub paths: Vec<String>,
    /// 1-based line the rule was read from.
    pub line: usize,
    /// The id column of a term list.
    pub id: Option<String>,
    /// The status column of a term list (established elsewhere).
    pub status: RuleStatus,
    /// The avoided forms match only exactly as written, case included: Vale
    /// substitution entries unless the style sets `ignorecase: true` (or the
    /// key starts with `(?i)`), vocabulary `reject.txt` entries unless they
    /// start with `(?i)`. Term-list rules are not exact.
    pub exact: bool,
}

/// What one file held: its rules, and the entries that could not be read as
/// rules (line, reason).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportedFile {
    pub rules: Vec<ImportedRule>,
    pub skipped: Vec<(usize, String)>,
}

pub(crate) fn numbered(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
}

pub(crate) fn check_len(n: usize, line: &str) -> Result<(), ParseError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(err(n, format!("line longer than {MAX_LINE_BYTES} bytes")));
    }
    Ok(())
}
