//! For people, in rustc's style, drawn by rustc's own renderer
//! (`annotate-snippets`, as typos draws its findings): the header, the
//! `-->` line, the gutter, the carets under the match by display width
//! (a wide character two columns, a combining mark none, a tab four) and
//! the `= help:` and `= note:` lines, in rustc's colours when styled.
//!
//! What kapi still does itself, and why:
//! - **Escaping.** annotate-snippets replaces C0 controls with their
//!   pictures and bidi overrides with U+FFFD, but passes C1 controls (a
//!   lone U+009B is CSI on many terminals), bidi marks and line
//!   separators through raw. Every value is escaped first, through
//!   [`crate::terminal`], as in every other human format of kapi (`\r`,
//!   `\u{1b}`, `\u{202e}`), so the renderer never sees a character that
//!   steers a terminal; only tabs reach it, which it draws as four spaces.
//! - **Cutting very long lines.** annotate-snippets windows a long line
//!   around the carets by display width (to [`TERM_WIDTH`] columns), but
//!   measures the whole line for each finding: many findings on a line of
//!   megabytes (a minified file) would cost the line's length each. A line
//!   longer than [`CUT_BYTES`] is first cut around the match from its byte
//!   offset, marked `...` where it was cut; the renderer windows the rest.
//! - **The `-->` line.** It names the match's line and column in the file
//!   (columns in characters, as the JSON and SARIF formats count them).
//!   The renderer would count the column in the text it was handed, which
//!   is escaped and may be cut; and an `Origin` naming the true place
//!   draws a stray `:::` line before a snippet without a path (0.12). So
//!   the snippet goes in without a path and kapi writes the `-->` line
//!   under the header, as the renderer draws it.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use crate::check::finding::{advice, suggested_note};
use crate::check::{Finding, Outcome, Severity, Summary};
use crate::terminal::{escape, push_shown};

/// The width the renderer fits a source line into (rustc's default).
pub const TERM_WIDTH: usize = 140;

/// Longer lines are cut around the match before they are rendered.
pub const CUT_BYTES: usize = 640;

/// Characters kept either side of the match when a line is cut.
const CONTEXT: usize = 60;

/// How a report is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// In rustc's colours (for a terminal).
    pub styled: bool,
    /// Only the findings that fail the check: no advice, no warnings, no
    /// summary (`kapi check -q`).
    pub failing_only: bool,
}

/// One finding as a rustc-style diagnostic.
fn finding(f: &Finding, renderer: &Renderer, styled: bool) -> String {
    let (level, id) = match f.severity {
        Severity::Error => (Level::ERROR, "term"),
        Severity::Warning => (Level::WARNING, "advisory"),
        Severity::Note => (Level::WARNING, "suggested"),
    };
    let len = f.matched.chars().count();
    let (cut, before) = window(&f.source_line, f.column, len, f.line_offset);
    // Escaped after the cut, so the cut never splits an escape.
    let (shown, span) = escaped_window(&cut, before, len);
    let title = escape(&advice(&f.preferred, &f.matched)).into_owned();
    let path = escape(&f.path);
    let mut notes: Vec<String> = Vec::new();
    let mut helps: Vec<String> = Vec::new();
    // A rule with no preferred form (a rejected term) has nothing to write.
    if !f.preferred.is_empty() {
        helps.push(format!("write \"{}\"", escape(&f.preferred)));
    }
    // Several rules behind one occurrence (two agents suggested the same
    // rule): named once each, on one finding.
    if f.rules.len() > 1 {
        let named: Vec<String> = f.rules.iter().map(|r| rule_name(r)).collect();
        notes.push(format!(
            "{} rules find this: {}",
            f.rules.len(),
            escape(&named.join(", "))
        ));
    }
    // A rule another repository shares: the project (from its log) and
    // the checkout (from the registry), escaped as all such text is.
    if let Some(project) = &f.workspace {
        let at = f
            .repository
            .as_ref()
            .map(|r| format!(" at {}", r.display()))
            .unwrap_or_default();
        notes.push(format!(
            "a workspace rule, from {}",
            escape(&format!("{project}{at}"))
        ));
    }
    if let Some(d) = &f.decision {
        notes.push(format!(
            "in force by #{}, signed ✓ {}",
            crate::ops::id::short(&d.id),
            escape(&d.signed_by)
        ));
    }
    if f.suggested {
        notes.push(escape(&suggested_note(&f.preferred)).into_owned());
    } else if !f.fails {
        notes.push("the rule is advisory: this does not fail the check".to_owned());
    }
    let snippet = Snippet::source(shown.as_str())
        .line_start(f.line)
        .annotation(AnnotationKind::Primary.span(span));
    let group = level
        .primary_title(title)
        .id(id)
        .element(snippet)
        .elements(helps.into_iter().map(|h| Level::HELP.message(h)))
        .elements(notes.into_iter().map(|n| Level::NOTE.message(n)));
    let drawn = renderer.render(&[group]);
    // The `-->` line goes under the header (one line: every value in it
    // is escaped), indented as the gutter is, its arrow in the gutter's
    // colour.
    let (head, body) = drawn.split_once('\n').unwrap_or((&drawn, ""));
    let pad = " ".repeat(f.line.to_string().len());
    let arrow = if styled {
        let gutter = annotate_snippets::renderer::DEFAULT_LINE_NUM_STYLE;
        format!("{gutter}--> {gutter:#}")
    } else {
        "--> ".to_owned()
    };
    format!(
        "{head}\n{pad}{arrow}{path}:{line}:{col}\n{body}\n",
        line = f.line,
        col = f.column
    )
}

/// A rule as people name it: an operation by its short id (`#0ttd83m01q`,
/// `#0ttd83m01q:3` for a rule of an imported file), a term list's rule as
/// `terms.tsv:3`.
fn rule_name(id: &str) -> String {
    let (op, rest) = id.split_at(id.find(':').unwrap_or(id.len()));
    if crate::ops::id::is_id(op) {
        format!("#{}{rest}", crate::ops::id::short(op))
    } else {
        id.to_string()
    }
}

/// The line to render and the number of characters before the match in
/// it: the line itself, or, past [`CUT_BYTES`], [`CONTEXT`] characters
/// either side of the match, cut from its byte offset (so many findings on
/// one long line cost the window's length each, not the line's) and
/// marked `...` where it was cut.
fn window(line: &str, column: usize, len: usize, offset: usize) -> (String, usize) {
    if line.len() <= CUT_BYTES || !line.is_char_boundary(offset.min(line.len())) {
        let at = column.saturating_sub(1).min(line.chars().count());
        return (line.to_owned(), at);
    }
    let offset = offset.min(line.len());
    let (head, tail) = line.split_at(offset);
    let back: Vec<char> = head.chars().rev().take(CONTEXT + 1).collect();
    let mut shown = String::new();
    let mut before = back.len().min(CONTEXT);
    if back.len() > CONTEXT {
        shown.push_str("...");
        before += 3;
    }
    shown.extend(back.iter().take(CONTEXT).rev());
    let mut ahead = tail.chars();
    shown.extend(ahead.by_ref().take(len + CONTEXT));
    if ahead.next().is_some() {
        shown.push_str("...");
    }
    (shown, before)
}

/// The window as the renderer gets it: each character that steers a
/// terminal escaped (tabs kept: the renderer draws them as four spaces),
/// and the match's byte range in it.
fn escaped_window(cut: &str, before: usize, len: usize) -> (String, std::ops::Range<usize>) {
    let mut shown = String::with_capacity(cut.len());
    let (mut start, mut end) = (None, None);
    for (i, c) in cut.chars().enumerate() {
        if i == before {
            start = Some(shown.len());
        }
        if i == before + len {
            end = Some(shown.len());
        }
        if c == '\t' {
            shown.push(c);
        } else {
            push_shown(&mut shown, c);
        }
    }
    let start = start.unwrap_or(shown.len());
    let end = end.unwrap_or(shown.len()).max(start);
    (shown, start..end)
}

/// The closing line.
pub fn summary(s: &Summary) -> String {
    let files = if s.files == 1 { "file" } else { "files" };
    let findings = if s.findings == 1 {
        "finding"
    } else {
        "findings"
    };
    format!(
        "checked {} {files}: {} {findings}, {} failing, {} reporting (score {})",
        s.files, s.findings, s.failing, s.reporting, s.score
    )
}

/// The whole report, plain.
#[cfg(test)]
pub fn render(outcome: &Outcome) -> String {
    render_with(outcome, Style::default())
}

/// The whole report, drawn as `style` says.
pub fn render_with(outcome: &Outcome, style: Style) -> String {
    let renderer = if style.styled {
        Renderer::styled()
    } else {
        Renderer::plain()
    }
    .term_width(TERM_WIDTH);
    let mut out = String::new();
    if !style.failing_only {
        for w in &outcome.warnings {
            let message = match &w.path {
                Some(p) => format!("{}: {}", escape(p), escape(&w.message)),
                None => escape(&w.message).into_owned(),
            };
            out.push_str(
                &renderer.render(&[Group::with_title(Level::WARNING.primary_title(message))]),
            );
            out.push('\n');
        }
    }
    for f in outcome
        .findings
        .iter()
        .filter(|f| f.fails || !style.failing_only)
    {
        out.push_str(&finding(f, &renderer, style.styled));
        out.push('\n');
    }
    if !style.failing_only {
        out.push_str(&summary(&outcome.summary()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_around_the_match_from_its_byte_offset() {
        // Past CUT_BYTES the window is cut from the byte offset: CONTEXT
        // characters either side, marked where cut, tabs kept.
        let long = format!("{}Github{}", "é\t".repeat(400), " b".repeat(400));
        let offset = long.find("Github").unwrap();
        let chars: Vec<char> = long.chars().collect();
        let mut expected = String::from("...");
        expected.extend(&chars[800 - CONTEXT..806 + CONTEXT]);
        expected.push_str("...");
        assert_eq!(window(&long, 801, 6, offset), (expected, CONTEXT + 3));
        // At the start of the line nothing is cut before it.
        let start = format!("Github{}", " b".repeat(400));
        let (cut, before) = window(&start, 1, 6, 0);
        assert_eq!(before, 0);
        assert!(
            cut.starts_with("Github b") && cut.ends_with(" b..."),
            "{cut}"
        );
        // A line within CUT_BYTES is the renderer's to window, whole.
        let line = format!("{}Github", "a ".repeat(300));
        assert_eq!(window(&line, 601, 6, 600), (line.clone(), 600));
        assert_eq!(window("\tx", 2, 1, 1), ("\tx".to_owned(), 1));
    }

    #[test]
    fn a_line_that_steers_the_terminal_is_escaped_after_the_cut_and_the_span_follows() {
        // An escape sequence before the match, and one inside it; a tab
        // stays for the renderer to draw.
        let (shown, span) = escaped_window("a\x1b[2K\tGit\rhub z", 6, 7);
        assert_eq!(shown, "a\\u{1b}[2K\tGit\\rhub z");
        assert_eq!(&shown[span], "Git\\rhub");
        // A long line is cut first: the cut never splits an escape.
        let line = format!("{}Github{}", "\u{202e}".repeat(400), "\x1b".repeat(400));
        let offset = line.find("Github").unwrap();
        let (cut, before) = window(&line, 401, 6, offset);
        let (shown, span) = escaped_window(&cut, before, 6);
        assert_eq!(&shown[span], "Github");
        assert!(shown.starts_with("...\\u{202e}") && shown.ends_with("\\u{1b}..."));
        assert!(!shown.contains('\u{202e}') && !shown.contains('\x1b'));
    }
}
