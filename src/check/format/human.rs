//! For people, in rustc's style. Paths, lines, forms and messages are
//! shown through [`crate::terminal`]: a file's line or a rule's form
//! never steers the terminal.

use crate::check::finding::{advice, suggested_note};
use crate::check::{Finding, Outcome, Severity, Summary};
use crate::terminal::{columns, escape, push_shown};

/// The style a severity is shown in on a terminal, as rustc colours it.
fn severity_style(severity: Severity) -> anstyle::Style {
    let colour = match severity {
        Severity::Error => anstyle::AnsiColor::Red,
        Severity::Warning => anstyle::AnsiColor::Yellow,
        Severity::Note => anstyle::AnsiColor::Cyan,
    };
    anstyle::Style::new().bold().fg_color(Some(colour.into()))
}

/// `text` in `style` when `styled`, else as it is.
fn paint(text: &str, style: anstyle::Style, styled: bool) -> String {
    if styled {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
    }
}

/// One finding as a rustc-style diagnostic; its head and carets in colour
/// when `styled` (and the gutter in blue, as rustc draws it).
fn finding(f: &Finding, styled: bool) -> String {
    let head = match f.severity {
        Severity::Error => "error[term]",
        Severity::Warning => "warning[advisory]",
        Severity::Note => "warning[suggested]",
    };
    let style = severity_style(f.severity);
    let gutter = anstyle::Style::new()
        .bold()
        .fg_color(Some(anstyle::AnsiColor::Blue.into()));
    let head = paint(head, style, styled);
    let num = f.line.to_string();
    let pad = " ".repeat(num.len());
    let len = f.matched.chars().count();
    let (cut, before) = window(&f.source_line, f.column, len, f.line_offset);
    // Escaped after the cut, so the cut never splits an escape; the carets
    // stand under the match as shown.
    let (shown, before, width) = escaped_window(&cut, before, len);
    let before = " ".repeat(before);
    let carets = paint(&"^".repeat(width.max(1)), style, styled);
    let (arrow, bar, num_shown) = (
        paint("-->", gutter, styled),
        paint("|", gutter, styled),
        paint(&num, gutter, styled),
    );
    let mut s = format!(
        "{head}: {advice}\n{pad}{arrow} {path}:{line}:{col}\n{pad} {bar}\n{num_shown} {bar} {shown}\n{pad} {bar} {before}{carets}\n",
        advice = escape(&advice(&f.preferred, &f.matched)),
        path = escape(&f.path),
        line = f.line,
        col = f.column,
    );
    // A rule with no preferred form (a rejected term) has nothing to write.
    if !f.preferred.is_empty() {
        s.push_str(&format!(
            "{pad} = help: write \"{}\"\n",
            escape(&f.preferred)
        ));
    }
    // Several rules behind one occurrence (two agents suggested the same
    // rule): named once each, on one finding.
    if f.rules.len() > 1 {
        let named: Vec<String> = f.rules.iter().map(|r| rule_name(r)).collect();
        s.push_str(&format!(
            "{pad} = note: {} rules find this: {}\n",
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
        s.push_str(&format!(
            "{pad} = note: a workspace rule, from {}\n",
            escape(&format!("{project}{at}"))
        ));
    }
    if f.suggested {
        s.push_str(&format!(
            "{pad} = note: {}\n",
            escape(&suggested_note(&f.preferred))
        ));
    } else if !f.fails {
        s.push_str(&format!(
            "{pad} = note: the rule is advisory: this does not fail the check\n"
        ));
    }
    s
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

/// Longest source line shown whole; longer lines show a window around the
/// match.
const MAX_SHOWN: usize = 160;
const CONTEXT: usize = 60;

/// The line as shown (tabs as single spaces, so carets line up; a long line
/// cut around the match) and the number of characters before the match.
fn window(line: &str, column: usize, len: usize, offset: usize) -> (String, usize) {
    // A line too long to be shown whole is cut around the match from its
    // byte offset: the cost is the window's, not the line's, so many
    // findings on one long line stay linear.
    if line.len() > 4 * MAX_SHOWN && line.is_char_boundary(offset.min(line.len())) {
        let offset = offset.min(line.len());
        let (head, tail) = line.split_at(offset);
        let back: Vec<char> = head.chars().rev().take(CONTEXT + 1).collect();
        let from_start = back.len() <= CONTEXT;
        let mut shown = String::new();
        let mut before = back.len().min(CONTEXT);
        if !from_start {
            shown.push_str("...");
            before += 3;
        }
        let blank = |c: char| if c == '\t' { ' ' } else { c };
        shown.extend(back.iter().take(CONTEXT).rev().map(|&c| blank(c)));
        let mut ahead = tail.chars();
        shown.extend(ahead.by_ref().take(len + CONTEXT).map(blank));
        if ahead.next().is_some() {
            shown.push_str("...");
        }
        return (shown, before);
    }
    let chars: Vec<char> = line
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let at = column.saturating_sub(1).min(chars.len());
    if chars.len() <= MAX_SHOWN {
        return (chars.into_iter().collect(), at);
    }
    let from = at.saturating_sub(CONTEXT);
    let to = (at + len + CONTEXT).min(chars.len());
    let mut shown = String::new();
    let mut before = at - from;
    if from > 0 {
        shown.push_str("...");
        before += 3;
    }
    shown.extend(&chars[from..to]);
    if to < chars.len() {
        shown.push_str("...");
    }
    (shown, before)
}

/// The window as shown: each character that steers a terminal escaped;
/// with the columns before the match and the columns it takes, as a
/// terminal shows them (a wide character two, a combining mark none, an
/// escape one per character it is written with; a tab is already a
/// space).
fn escaped_window(cut: &str, before: usize, len: usize) -> (String, usize, usize) {
    let mut shown = String::with_capacity(cut.len());
    let (mut start, mut end) = (None, None);
    for (i, c) in cut.chars().enumerate() {
        if i == before {
            start = Some(shown.len());
        }
        if i == before + len {
            end = Some(shown.len());
        }
        push_shown(&mut shown, c);
    }
    let start = start.unwrap_or(shown.len());
    let end = end.unwrap_or(shown.len()).max(start);
    let (ahead, width) = (columns(&shown[..start]), columns(&shown[start..end]));
    (shown, ahead, width)
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

/// The whole report.
pub fn render(outcome: &Outcome) -> String {
    render_styled(outcome, false)
}

/// [`render`], the findings in colour when `styled` (for a terminal).
pub fn render_styled(outcome: &Outcome, styled: bool) -> String {
    let mut out = String::new();
    for w in &outcome.warnings {
        match &w.path {
            Some(p) => out.push_str(&format!("warning: {}: {}\n", escape(p), escape(&w.message))),
            None => out.push_str(&format!("warning: {}\n", escape(&w.message))),
        }
    }
    for f in &outcome.findings {
        out.push_str(&finding(f, styled));
        out.push('\n');
    }
    out.push_str(&summary(&outcome.summary()));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_show_a_window_around_the_match() {
        let line = format!("{}Github{}", "a ".repeat(200), " b".repeat(200));
        let (shown, before) = window(&line, 401, 6, 400);
        assert!(shown.starts_with("...") && shown.ends_with("..."));
        assert_eq!(&shown[before..before + 6], "Github");
        assert_eq!(window("\tx", 2, 1, 1), (" x".to_string(), 1));
        // Past 640 bytes the window is cut from the byte offset, and reads
        // exactly as the character count would have cut it.
        let long = format!("{}Github{}", "é\t".repeat(400), " b".repeat(400));
        let offset = long.find("Github").unwrap();
        let by_offset = window(&long, 801, 6, offset);
        let chars: Vec<char> = long
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .collect();
        let mut expected = String::from("...");
        expected.extend(&chars[800 - CONTEXT..806 + CONTEXT]);
        expected.push_str("...");
        assert_eq!(by_offset, (expected, CONTEXT + 3));
        let start = format!("Github{}", " b".repeat(400));
        assert_eq!(window(&start, 1, 6, 0).1, 0);
    }

    #[test]
    fn a_line_that_steers_the_terminal_is_escaped_after_the_cut_and_the_carets_follow() {
        // An escape sequence before the match, and one inside it.
        let (shown, before, width) = escaped_window("a\x1b[2K Git\rhub z", 6, 7);
        assert_eq!(shown, "a\\u{1b}[2K Git\\rhub z");
        assert_eq!(&shown[before..before + width], "Git\\rhub");
        // A long line is cut first: the cut never splits an escape.
        let line = format!("{}Github{}", "\u{202e}".repeat(400), "\x1b".repeat(400));
        let offset = line.find("Github").unwrap();
        let (cut, before) = window(&line, 401, 6, offset);
        let (shown, before, width) = escaped_window(&cut, before, 6);
        assert_eq!(&shown[before..before + width], "Github");
        assert!(shown.starts_with("...\\u{202e}") && shown.ends_with("\\u{1b}..."));
        assert!(!shown.contains('\u{202e}') && !shown.contains('\x1b'));
    }
}
