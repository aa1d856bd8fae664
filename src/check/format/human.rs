//! For people, in rustc's style.

use crate::check::{Finding, Outcome, Severity, Summary};

/// One finding as a rustc-style diagnostic.
pub fn finding(f: &Finding) -> String {
    let head = match f.severity {
        Severity::Error => "error[term]",
        Severity::Warning => "warning[advisory]",
        Severity::Note => "warning[suggested]",
    };
    let num = f.line.to_string();
    let pad = " ".repeat(num.len());
    // Tabs would shift the carets; show them as single spaces.
    let shown = f.source_line.replace('\t', " ");
    let before = " ".repeat(f.column.saturating_sub(1));
    let carets = "^".repeat(f.matched.chars().count().max(1));
    let mut s = format!(
        "{head}: use \"{p}\", not \"{m}\"\n{pad}--> {path}:{line}:{col}\n{pad} |\n{num} | {shown}\n{pad} | {before}{carets}\n{pad} = help: write \"{p}\"\n",
        p = f.preferred,
        m = f.matched,
        path = f.path,
        line = f.line,
        col = f.column,
    );
    if f.suggested {
        s.push_str(&format!(
            "{pad} = note: Suggested rule about \"{}\", not yet established\n",
            f.preferred
        ));
    } else if !f.fails {
        s.push_str(&format!(
            "{pad} = note: the rule is advisory: this does not fail the check\n"
        ));
    }
    s
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
    let mut out = String::new();
    for w in &outcome.warnings {
        match &w.path {
            Some(p) => out.push_str(&format!("warning: {p}: {}\n", w.message)),
            None => out.push_str(&format!("warning: {}\n", w.message)),
        }
    }
    for f in &outcome.findings {
        out.push_str(&finding(f));
        out.push('\n');
    }
    out.push_str(&summary(&outcome.summary()));
    out.push('\n');
    out
}
