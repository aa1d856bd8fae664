//! `kapi check --diff`: what `--fix` would write, as a unified diff with
//! git's `a/` and `b/` prefixes and three lines of context, so `git apply`
//! and `patch -p1` read it (lines by `similar`, which kapi already builds).

use similar::TextDiff;

/// The diff of each file from `before` to `after`, in the order given; a
/// file that does not change gives nothing. Exact: the file's bytes as
/// they are (see [`for_terminal`]).
pub fn render<'a>(files: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (path, before, after) in files {
        if before == after {
            continue;
        }
        let diff = TextDiff::from_lines(before, after);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{path}"), &format!("b/{path}"))
                .to_string(),
        );
    }
    out
}

/// A diff as a terminal shows it: what would steer it escaped on each
/// line (tabs kept), and when `styled` in git's colours (headers bold,
/// hunk heads cyan, removed lines red, added lines green).
pub fn for_terminal(diff: &str, styled: bool) -> String {
    use anstyle::{AnsiColor, Style};
    let mut out = String::with_capacity(diff.len());
    for line in diff.split_terminator('\n') {
        let shown = crate::terminal::escape_but(line, |c| c == '\t');
        let style = if line.starts_with("--- ") || line.starts_with("+++ ") {
            Style::new().bold()
        } else if line.starts_with("@@") {
            Style::new().fg_color(Some(AnsiColor::Cyan.into()))
        } else if line.starts_with('-') {
            Style::new().fg_color(Some(AnsiColor::Red.into()))
        } else if line.starts_with('+') {
            Style::new().fg_color(Some(AnsiColor::Green.into()))
        } else {
            Style::new()
        };
        if styled && style != Style::new() {
            out.push_str(&format!("{style}{shown}{style:#}\n"));
        } else {
            out.push_str(&shown);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_each_changed_file_and_skips_the_rest() {
        let d = render([
            (
                "a.md",
                "one\nQuick cast\nthree\n",
                "one\nQuickcast\nthree\n",
            ),
            ("b.md", "same\n", "same\n"),
            ("c.md", "Quick cast", "Quickcast"),
        ]);
        assert_eq!(
            d,
            "--- a/a.md\n+++ b/a.md\n@@ -1,3 +1,3 @@\n one\n-Quick cast\n+Quickcast\n three\n\
             --- a/c.md\n+++ b/c.md\n@@ -1 +1 @@\n-Quick cast\n\\ No newline at end of file\n+Quickcast\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn on_a_terminal_a_line_never_steers_it() {
        let d = render([("a.md", "x\u{1b}[2J Quick cast\n", "x\u{1b}[2J Quickcast\n")]);
        let shown = for_terminal(&d, false);
        assert!(shown.contains("-x\\u{1b}[2J Quick cast\n"), "{shown}");
        assert!(!shown.contains('\u{1b}'));
        let coloured = for_terminal("+\tb\n", true);
        assert_eq!(coloured, "\u{1b}[32m+\tb\u{1b}[0m\n");
    }
}
