//! GitHub Actions workflow commands: one annotation per finding.

use crate::check::{Outcome, Severity};

fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(outcome: &Outcome) -> String {
    let mut out = String::new();
    for w in &outcome.warnings {
        match &w.path {
            Some(p) => out.push_str(&format!(
                "::warning file={}::{}\n",
                property(p),
                data(&w.message)
            )),
            None => out.push_str(&format!("::warning::{}\n", data(&w.message))),
        }
    }
    for f in &outcome.findings {
        let cmd = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let title = if f.suggested {
            "kapi: suggested term"
        } else {
            "kapi: term"
        };
        out.push_str(&format!(
            "::{cmd} file={},line={},col={},endColumn={},title={}::{}\n",
            property(&f.path),
            f.line,
            f.column,
            f.end_column,
            property(title),
            data(&f.message)
        ));
    }
    out.push_str(&super::human::summary(&outcome.summary()));
    out.push('\n');
    out
}
