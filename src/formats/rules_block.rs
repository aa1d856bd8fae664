//! The managed block in a rules file (AGENTS.md, CLAUDE.md): the rules and
//! notes in force, between marker comments. kapi replaces only what lies
//! between its markers; a file without them gets the block appended, never
//! rewritten; markers that are unbalanced or repeated are refused rather
//! than guessed at.

/// The start of the opening marker line.
pub const BEGIN: &str = "<!-- kapi:begin";
/// The opening marker kapi writes.
pub const BEGIN_LINE: &str =
    "<!-- kapi:begin (managed by kapi: edits between these markers are replaced) -->";
/// The closing marker line.
pub const END: &str = "<!-- kapi:end -->";
/// The rendered block stays under this many bytes (rules files are read into
/// an agent's context, which caps them at 32 KiB).
pub const MAX_BLOCK_BYTES: usize = 24 * 1024;
/// The command that lists everything in force.
pub const SEE_ALL: &str = "kapi context log --status established";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesFileError {
    #[error("line {line}: a second `{BEGIN}` marker before `{END}`; remove one and run again")]
    NestedBegin { line: usize },
    #[error("line {line}: `{END}` without a `{BEGIN}` marker before it; remove it and run again")]
    EndWithoutBegin { line: usize },
    #[error(
        "line {line}: `{BEGIN}` is never closed by `{END}`; add the closing marker and run again"
    )]
    Unclosed { line: usize },
    #[error("lines {first} and {second}: two kapi blocks; keep one and run again")]
    Duplicate { first: usize, second: usize },
}

/// A rule in force, as the block lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRule {
    pub preferred: String,
    pub avoided: Vec<String>,
    /// Where it holds, when not the whole project (e.g. `docs/`).
    pub scope: Option<String>,
}

/// A note kept, as the block lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockNote {
    pub text: String,
    pub scope: Option<String>,
}

/// Markdown-escape the characters that would change how a form renders.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>') {
            out.push('\\');
        }
        out.push(if c == '\n' { ' ' } else { c });
    }
    out
}

/// A form as inline code: the rules file names the avoided forms without
/// writing them as prose, so `kapi check` does not flag its own list.
fn code(form: &str) -> String {
    let form = form.replace('\n', " ");
    if form.contains('`') {
        format!("`` {form} ``")
    } else {
        format!("`{form}`")
    }
}

fn rule_line(r: &BlockRule) -> String {
    let forms: Vec<String> = r.avoided.iter().map(|f| code(f)).collect();
    let mut s = if r.preferred.is_empty() {
        format!("- Avoid {}", forms.join(", "))
    } else if forms.is_empty() {
        format!("- Write **{}**", escape(&r.preferred))
    } else {
        format!(
            "- Write **{}**, not {}",
            escape(&r.preferred),
            forms.join(", ")
        )
    };
    if let Some(scope) = &r.scope {
        s.push_str(&format!(" ({})", escape(scope)));
    }
    s.push('\n');
    s
}

fn note_line(n: &BlockNote) -> String {
    let mut s = format!("- {}", escape(n.text.trim()));
    if let Some(scope) = &n.scope {
        s.push_str(&format!(" ({})", escape(scope)));
    }
    s.push('\n');
    s
}

fn truncated(left_out: usize) -> String {
    let what = if left_out == 1 { "entry" } else { "entries" };
    format!(
        "\n{left_out} more {what} left out to keep this file small; see all with `{SEE_ALL}`.\n"
    )
}

/// Which rules file a block is for: the project's (at the top of the work
/// tree: every rule, each with where it holds) or a folder's (what holds
/// at the folder's point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place<'a> {
    Project,
    Folder {
        /// The folder, relative to the work tree (`docs/app`).
        folder: &'a str,
        /// The folder's point as `axis=value` pairs; empty for the
        /// project point.
        point: &'a [String],
    },
}

impl Place<'_> {
    fn head(&self) -> String {
        match self {
            Place::Project => "## Project context (kapi)\n\nThis list is kept by kapi from the project's context log.\n".into(),
            Place::Folder { folder, point } => {
                let at = if point.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", escape(&point.join(", ")))
                };
                format!(
                    "## Context in {} (kapi)\n\nWhat holds in this folder{at}, kept by kapi from the project's context log; the rules file at the top of the project lists every rule.\n",
                    code(&format!("{folder}/"))
                )
            }
        }
    }
}

/// The block's body: the rules in force and the notes kept, in the given
/// order, cut to stay under [`MAX_BLOCK_BYTES`] with a line saying how many
/// were left out.
pub fn render_block(rules: &[BlockRule], notes: &[BlockNote]) -> String {
    render_block_within(Place::Project, rules, notes, MAX_BLOCK_BYTES)
}

/// [`render_block`] for a folder's rules file (or the project's).
pub fn render_block_at(place: Place<'_>, rules: &[BlockRule], notes: &[BlockNote]) -> String {
    render_block_within(place, rules, notes, MAX_BLOCK_BYTES)
}

/// [`render_block_at`] with another budget (for tests).
pub fn render_block_within(
    place: Place<'_>,
    rules: &[BlockRule],
    notes: &[BlockNote],
    budget: usize,
) -> String {
    let mut out = place.head();
    // The longest trailer we may need, reserved up front.
    let reserve = truncated(rules.len() + notes.len()).len() + 40;
    let total = rules.len() + notes.len();
    let mut written = 0usize;
    let mut full = false;
    let section = |title: &str,
                   lines: Vec<String>,
                   out: &mut String,
                   written: &mut usize,
                   full: &mut bool| {
        if lines.is_empty() || *full {
            return;
        }
        let title = format!("\n{title}\n\n");
        if out.len() + title.len() + reserve > budget {
            *full = true;
            return;
        }
        out.push_str(&title);
        for l in lines {
            if out.len() + l.len() + reserve > budget {
                *full = true;
                return;
            }
            out.push_str(&l);
            *written += 1;
        }
    };
    section(
        "### Rules in force",
        rules.iter().map(rule_line).collect(),
        &mut out,
        &mut written,
        &mut full,
    );
    section(
        "### Notes a person kept",
        notes.iter().map(note_line).collect(),
        &mut out,
        &mut written,
        &mut full,
    );
    if rules.is_empty() && notes.is_empty() {
        out.push_str("\nNo rules or notes are in force yet.\n");
    }
    if written < total {
        out.push_str(&truncated(total - written));
    }
    out
}

fn is_begin(line: &str) -> bool {
    line.trim_start().starts_with(BEGIN)
}

fn is_end(line: &str) -> bool {
    line.trim() == END
}

/// A fence opening or closing line (```` ``` ```` or `~~~`, indented at
/// most three spaces): its character and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let body = &line[indent..];
    let ch = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = body.len() - body.trim_start_matches(ch).len();
    (indent <= 3 && run >= 3).then_some((ch, run))
}

/// The byte span of the block (from its opening marker's line start to the
/// end of its closing marker's line, newline included), if there is one.
/// Markers inside fenced code (an example of the block) are not markers; a
/// byte order mark before the first line is kept outside the block.
fn find_block(text: &str) -> Result<Option<(usize, usize)>, RulesFileError> {
    let mut open: Option<(usize, usize)> = None; // (line, byte start)
    let mut found: Option<(usize, usize, usize)> = None; // (line, start, end)
    let mut in_fence: Option<(char, usize)> = None;
    let mut offset = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let mut line = raw.trim_end_matches(['\n', '\r']);
        let mut start = offset;
        if i == 0
            && let Some(rest) = line.strip_prefix('\u{feff}')
        {
            line = rest;
            start += '\u{feff}'.len_utf8();
        }
        let n = i + 1;
        if open.is_none() {
            match (in_fence, fence(line)) {
                (None, Some(f)) => {
                    in_fence = Some(f);
                    offset += raw.len();
                    continue;
                }
                (Some((ch, len)), Some((c, run)))
                    if c == ch && run >= len && line.trim().chars().all(|x| x == ch) =>
                {
                    in_fence = None;
                    offset += raw.len();
                    continue;
                }
                (Some(_), _) => {
                    offset += raw.len();
                    continue;
                }
                _ => {}
            }
        }
        if is_begin(line) {
            if open.is_some() {
                return Err(RulesFileError::NestedBegin { line: n });
            }
            if let Some((first, _, _)) = found {
                return Err(RulesFileError::Duplicate { first, second: n });
            }
            open = Some((n, start));
        } else if is_end(line) {
            match open.take() {
                Some((first, start)) => found = Some((first, start, offset + raw.len())),
                None => return Err(RulesFileError::EndWithoutBegin { line: n }),
            }
        }
        offset += raw.len();
    }
    if let Some((line, _)) = open {
        return Err(RulesFileError::Unclosed { line });
    }
    Ok(found.map(|(_, s, e)| (s, e)))
}

/// The block with its markers, newline-terminated.
pub fn block(body: &str) -> String {
    let body = body.trim_end_matches('\n');
    format!("{BEGIN_LINE}\n{body}\n{END}\n")
}

/// The new content of a rules file: `existing` with its block replaced by
/// one holding `body`; a file without markers gets the block appended after
/// a blank line; a missing file (`None`) gets just the block.
pub fn refresh_block(existing: Option<&str>, body: &str) -> Result<String, RulesFileError> {
    let new_block = block(body);
    let Some(text) = existing else {
        return Ok(new_block);
    };
    match find_block(text)? {
        Some((start, end)) => {
            let mut out = String::with_capacity(text.len() + new_block.len());
            out.push_str(&text[..start]);
            out.push_str(&new_block);
            let rest = &text[end..];
            // A closing marker on the file's last line without a newline.
            if end == text.len() && !text.ends_with('\n') {
                out.pop();
            }
            out.push_str(rest);
            Ok(out)
        }
        None => {
            let mut out = text.to_string();
            if !out.is_empty() {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push('\n');
            }
            out.push_str(&new_block);
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(p: &str, a: &[&str], scope: Option<&str>) -> BlockRule {
        BlockRule {
            preferred: p.into(),
            avoided: a.iter().map(|s| s.to_string()).collect(),
            scope: scope.map(Into::into),
        }
    }

    #[test]
    fn renders_rules_and_notes() {
        let b = render_block(
            &[rule(
                "Quickcast",
                &["Quick cast", "Quick-cast", "QuickCast"],
                Some("docs/"),
            )],
            &[BlockNote {
                text: "Release notes use past tense.".into(),
                scope: None,
            }],
        );
        assert!(
            b.contains(
                "- Write **Quickcast**, not `Quick cast`, `Quick-cast`, `QuickCast` (docs/)\n"
            ),
            "{b}"
        );
        assert!(b.contains("### Notes a person kept\n\n- Release notes use past tense.\n"));
    }

    #[test]
    fn truncates_with_a_count_and_the_command() {
        let rules: Vec<BlockRule> = (0..5000)
            .map(|i| rule(&format!("Term{i}"), &["x y", "x-y"], None))
            .collect();
        let b = render_block(&rules, &[]);
        assert!(b.len() < MAX_BLOCK_BYTES);
        assert!(
            b.contains("more entries left out"),
            "{}",
            &b[b.len() - 200..]
        );
        assert!(b.contains(SEE_ALL));
    }

    #[test]
    fn missing_file_gets_the_block() {
        assert_eq!(refresh_block(None, "body").unwrap(), block("body"));
    }

    #[test]
    fn file_without_markers_gets_it_appended() {
        let before = "# Agents\n\nBe kind.";
        let after = refresh_block(Some(before), "body").unwrap();
        assert!(after.starts_with(before));
        assert_eq!(after, format!("{before}\n\n{}", block("body")));
    }

    #[test]
    fn replaces_only_between_markers() {
        let before = format!("top\n{BEGIN_LINE}\nold\n{END}\nbottom\n");
        let after = refresh_block(Some(&before), "new").unwrap();
        assert_eq!(after, format!("top\n{}bottom\n", block("new")));
        let custom = "top\n<!-- kapi:begin hand-written -->\nold\r\n<!-- kapi:end -->";
        assert_eq!(
            refresh_block(Some(custom), "new").unwrap(),
            format!("top\n{BEGIN_LINE}\nnew\n{END}")
        );
    }

    #[test]
    fn markers_inside_fenced_code_are_examples() {
        let before = format!(
            "# Agents\n\n```markdown\n{BEGIN_LINE}\nexample\n{END}\n```\n\n~~~~\n{END}\n~~~~\n"
        );
        let after = refresh_block(Some(&before), "body").unwrap();
        assert_eq!(after, format!("{before}\n{}", block("body")));
        let framed = format!("{before}{BEGIN_LINE}\nold\n{END}\n");
        assert_eq!(
            refresh_block(Some(&framed), "new").unwrap(),
            format!("{before}{}", block("new"))
        );
    }

    #[test]
    fn a_byte_order_mark_is_kept_before_the_markers() {
        let before = format!("\u{feff}{BEGIN_LINE}\nold\n{END}\nrest\n");
        assert_eq!(
            refresh_block(Some(&before), "new").unwrap(),
            format!("\u{feff}{}rest\n", block("new"))
        );
    }

    #[test]
    fn refuses_unbalanced_or_duplicated_markers() {
        let b = format!("{BEGIN_LINE}\n");
        assert_eq!(
            refresh_block(Some(&b), "x"),
            Err(RulesFileError::Unclosed { line: 1 })
        );
        let e = format!("a\n{END}\n");
        assert_eq!(
            refresh_block(Some(&e), "x"),
            Err(RulesFileError::EndWithoutBegin { line: 2 })
        );
        let n = format!("{BEGIN_LINE}\n{BEGIN_LINE}\n{END}\n");
        assert_eq!(
            refresh_block(Some(&n), "x"),
            Err(RulesFileError::NestedBegin { line: 2 })
        );
        let d = format!("{BEGIN_LINE}\n{END}\n{BEGIN_LINE}\n{END}\n");
        assert_eq!(
            refresh_block(Some(&d), "x"),
            Err(RulesFileError::Duplicate {
                first: 1,
                second: 3
            })
        );
    }

    proptest! {
        #[test]
        fn refresh_is_idempotent_and_keeps_the_outside(
            before in "[a-z #\n]{0,40}", after in "[a-z #\n]{0,40}", body in "[a-z\n]{0,40}", body2 in "[a-z\n]{0,40}"
        ) {
            let once = refresh_block(Some(&before), &body).unwrap();
            prop_assert!(once.starts_with(&before));
            let twice = refresh_block(Some(&once), &body2).unwrap();
            prop_assert_eq!(refresh_block(Some(&twice), &body2).unwrap(), twice.clone());
            let framed = format!("{before}\n{}{after}", block(&body));
            let replaced = refresh_block(Some(&framed), &body2).unwrap();
            prop_assert_eq!(replaced, format!("{before}\n{}{after}", block(&body2)));
        }

        #[test]
        fn block_stays_within_budget(n in 0usize..400, len in 1usize..200) {
            let rules: Vec<BlockRule> = (0..n).map(|i| BlockRule {
                preferred: format!("{i}{}", "a".repeat(len)), avoided: vec!["b".repeat(len)], scope: None,
            }).collect();
            let notes: Vec<BlockNote> = (0..n).map(|_| BlockNote { text: "n".repeat(len), scope: Some("s".into()) }).collect();
            prop_assert!(render_block_within(Place::Project, &rules, &notes, 4096).len() <= 4096);
            let point = vec!["product=quickcast".to_string()];
            let folder = Place::Folder { folder: "docs/app", point: &point };
            prop_assert!(render_block_within(folder, &rules, &notes, 4096).len() <= 4096);
        }
    }
}
