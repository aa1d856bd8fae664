//! What in a file is prose. Everything else is masked: replaced by spaces,
//! byte for byte, so offsets, lines and columns in the masked text are those
//! of the file. Newlines are kept.
//!
//! Markdown: front matter (`---` YAML, `+++` TOML), fenced and indented code,
//! inline code, HTML comments and tags, Hugo shortcodes, autolinks, URLs,
//! link targets, reference definitions and reference labels. Plain text: URLs
//! only. Domains and paths (`github.com/...`, `../.github`, `docs/foo.md`) are
//! left to the matcher's word boundaries, which refuse a form touching `.`,
//! `/` or `-` that continues into a word.
//!
//! Switch comments: `<!-- kapi off -->` ... `<!-- kapi on -->` (and Vale's
//! `<!-- vale off -->` ... `<!-- vale on -->`) mask a passage for every rule;
//! `<!-- kapi off: Quickcast, 0n79tw -->` ... `<!-- kapi on: Quickcast -->`
//! (or `<!-- kapi on -->`) switch single rules off, by preferred form or id.

use std::path::Path;

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Markdown,
    Text,
}

impl FileKind {
    /// Markdown for `.md`, `.markdown`, `.mdx` (and similar); text otherwise.
    pub fn of_path(path: &Path) -> Self {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext.to_ascii_lowercase().as_str() {
            "md" | "markdown" | "mdx" | "mdown" | "mkd" | "mkdn" => FileKind::Markdown,
            _ => FileKind::Text,
        }
    }
}

/// A passage where some rules are switched off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// Preferred forms or id prefixes, as written in the comment.
    pub selectors: Vec<String>,
    /// Byte span of the passage.
    pub start: usize,
    pub end: usize,
}

/// The prose of a file: the masked text and the per-rule switches.
#[derive(Debug, Clone)]
pub struct Prose {
    pub text: String,
    pub switches: Vec<Switch>,
}

/// Mask what is not prose.
pub fn prose(text: &str, kind: FileKind) -> Prose {
    let mut m = text.as_bytes().to_vec();
    let mut switches = Vec::new();
    match kind {
        FileKind::Markdown => {
            front_matter(&mut m);
            blocks(&mut m);
            switches = comments(&mut m);
            inline_code(&mut m);
            inline(&mut m, true);
        }
        FileKind::Text => inline(&mut m, false),
    }
    // Every masked range starts and ends at an ASCII byte (or a line end), so
    // whole characters are replaced and the bytes stay UTF-8.
    let text =
        String::from_utf8(m).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Prose { text, switches }
}

fn blank(m: &mut [u8], start: usize, end: usize) {
    let end = end.min(m.len());
    for b in &mut m[start..end] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// Lines as (start, end-without-newline, next-line-start).
fn lines(m: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < m.len() {
        let nl = memchr::memchr(b'\n', &m[start..]).map(|p| start + p);
        let (end, next) = match nl {
            Some(p) => (p, p + 1),
            None => (m.len(), m.len()),
        };
        let end = if end > start && m[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        out.push((start, end, next));
        start = next;
    }
    out
}

fn front_matter(m: &mut [u8]) {
    let delim: &[u8] = if m.starts_with(b"---") {
        b"---"
    } else if m.starts_with(b"+++") {
        b"+++"
    } else {
        return;
    };
    let ls = lines(m);
    let Some(&(s0, e0, _)) = ls.first() else {
        return;
    };
    if trim_end(&m[s0..e0]) != delim {
        return;
    }
    for &(s, e, next) in ls.iter().skip(1) {
        if trim_end(&m[s..e]) == delim {
            blank(m, 0, next);
            return;
        }
    }
}

fn trim_end(b: &[u8]) -> &[u8] {
    let mut e = b.len();
    while e > 0 && (b[e - 1] == b' ' || b[e - 1] == b'\t') {
        e -= 1;
    }
    &b[..e]
}

/// Leading indentation in columns (a tab advances to the next multiple of 4)
/// and the byte offset of the first non-blank byte.
fn indent(b: &[u8]) -> (usize, usize) {
    let mut col = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b' ' => col += 1,
            b'\t' => col = col / 4 * 4 + 4,
            _ => return (col, i),
        }
    }
    (col, b.len())
}

/// The content indent of a list item starting this line, if it is one.
fn list_item(b: &[u8], ind: usize, at: usize) -> Option<usize> {
    let rest = &b[at..];
    let marker = match rest.first()? {
        b'-' | b'*' | b'+' => 1,
        c if c.is_ascii_digit() => {
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            match rest.get(digits) {
                Some(b'.' | b')') if digits <= 9 => digits + 1,
                _ => return None,
            }
        }
        _ => return None,
    };
    match rest.get(marker) {
        None => Some(ind + marker + 1),
        Some(b' ' | b'\t') => {
            let spaces = rest[marker..]
                .iter()
                .take_while(|&&c| c == b' ')
                .count()
                .max(1);
            Some(ind + marker + if spaces > 4 { 1 } else { spaces })
        }
        _ => None,
    }
}

/// Fenced and indented code, reference definitions.
fn blocks(m: &mut [u8]) {
    let mut fence: Option<(u8, usize)> = None;
    let mut list_indent = 0usize;
    let mut in_paragraph = false;
    let mut prev_blank = true;
    for (s, e, _) in lines(m) {
        let line = &m[s..e];
        let (ind, at) = indent(line);
        let body = &line[at..];
        if let Some((ch, len)) = fence {
            let run = body.iter().take_while(|&&c| c == ch).count();
            if run >= len && trim_end(&body[run..]).is_empty() && ind < list_indent + 4 {
                fence = None;
            }
            blank(m, s, e);
            continue;
        }
        if body.is_empty() {
            prev_blank = true;
            in_paragraph = false;
            continue;
        }
        if prev_blank && ind < list_indent {
            list_indent = 0;
        }
        if ind >= list_indent + 4 && !in_paragraph {
            blank(m, s, e); // indented code
            prev_blank = false;
            continue;
        }
        let first = body[0];
        if first == b'`' || first == b'~' {
            let run = body.iter().take_while(|&&c| c == first).count();
            if run >= 3 && !(first == b'`' && body[run..].contains(&b'`')) {
                fence = Some((first, run));
                blank(m, s, e);
                in_paragraph = false;
                prev_blank = false;
                continue;
            }
        }
        if ind <= 3 && is_reference_definition(body) {
            blank(m, s, e);
            in_paragraph = false;
            prev_blank = false;
            continue;
        }
        if let Some(content) = list_item(line, ind, at) {
            list_indent = content;
            in_paragraph = true;
        } else {
            in_paragraph = first != b'#';
        }
        prev_blank = false;
    }
}

/// `[label]: destination "title"` (not a footnote `[^1]: ...`).
fn is_reference_definition(body: &[u8]) -> bool {
    if body.first() != Some(&b'[') || body.get(1) == Some(&b'^') {
        return false;
    }
    match body.iter().position(|&c| c == b']') {
        Some(p) if p > 1 => body.get(p + 1) == Some(&b':'),
        _ => false,
    }
}

enum Event {
    AllOff,
    AllOn,
    Off(Vec<String>),
    On(Vec<String>),
}

fn switch_event(comment: &str) -> Option<Event> {
    let c = comment.trim();
    let (word, rest) = if let Some(r) = c.strip_prefix("kapi ") {
        ("kapi", r.trim())
    } else if let Some(r) = c.strip_prefix("vale ") {
        ("vale", r.trim())
    } else {
        return None;
    };
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    };
    match (word, rest) {
        (_, "off") => Some(Event::AllOff),
        (_, "on") => Some(Event::AllOn),
        ("kapi", r) => {
            if let Some(sel) = r.strip_prefix("off:") {
                Some(Event::Off(list(sel)))
            } else {
                r.strip_prefix("on:").map(|sel| Event::On(list(sel)))
            }
        }
        _ => None,
    }
}

/// HTML comments: masked, and read for switches.
fn comments(m: &mut [u8]) -> Vec<Switch> {
    let mut events: Vec<(usize, usize, Event)> = Vec::new();
    let mut i = 0;
    while let Some(p) = find(m, b"<!--", i) {
        let end = match find(m, b"-->", p + 4) {
            Some(q) => q + 3,
            None => m.len(),
        };
        let inner_end = end.saturating_sub(3).max(p + 4);
        if let Some(ev) = std::str::from_utf8(&m[p + 4..inner_end])
            .ok()
            .and_then(switch_event)
        {
            events.push((p, end, ev));
        }
        blank(m, p, end);
        i = end;
    }
    let mut switches = Vec::new();
    let mut all_off: Option<usize> = None;
    let mut open: Vec<(String, usize)> = Vec::new();
    let close = |sel: String, from: usize, to: usize, out: &mut Vec<Switch>| {
        out.push(Switch {
            selectors: vec![sel],
            start: from,
            end: to,
        });
    };
    for (start, end, ev) in events {
        match ev {
            Event::AllOff => {
                all_off.get_or_insert(end);
            }
            Event::AllOn => {
                if let Some(from) = all_off.take() {
                    blank(m, from, start);
                }
                for (sel, from) in open.drain(..) {
                    close(sel, from, start, &mut switches);
                }
            }
            Event::Off(sels) => {
                for sel in sels {
                    if !open.iter().any(|(s, _)| *s == sel) {
                        open.push((sel, end));
                    }
                }
            }
            Event::On(sels) => {
                for sel in sels {
                    if let Some(k) = open.iter().position(|(s, _)| *s == sel) {
                        let (sel, from) = open.remove(k);
                        close(sel, from, start, &mut switches);
                    }
                }
            }
        }
    }
    if let Some(from) = all_off {
        let len = m.len();
        blank(m, from, len);
    }
    let len = m.len();
    for (sel, from) in open {
        close(sel, from, len, &mut switches);
    }
    switches
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() {
        return None;
    }
    memchr::memmem::find(&hay[from..], needle).map(|p| p + from)
}

/// The end of the run of `b` bytes starting at `i`.
fn run_end(m: &[u8], i: usize, b: u8) -> usize {
    i + m[i..].iter().take_while(|&&c| c == b).count()
}

/// Whether the line starting at `start` holds only whitespace.
fn blank_line_at(m: &[u8], start: usize) -> bool {
    let end = memchr::memchr(b'\n', &m[start..]).map_or(m.len(), |e| start + e);
    m[start..end]
        .iter()
        .all(|&c| matches!(c, b' ' | b'\t' | b'\r'))
}

/// Inline code spans: a run of backticks closed by a run of the same length,
/// within one paragraph.
fn inline_code(m: &mut [u8]) {
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'`', &m[i..]) {
        let open = i + p;
        let j = run_end(m, open, b'`');
        let run = j - open;
        // A closing run of exactly `run` backticks before a blank line.
        let mut k = j;
        let mut closed = None;
        while let Some(q) = memchr::memchr2(b'`', b'\n', &m[k..]) {
            let q = k + q;
            if m[q] == b'\n' {
                if blank_line_at(m, q + 1) {
                    break;
                }
                k = q + 1;
                continue;
            }
            let e = run_end(m, q, b'`');
            if e - q == run {
                closed = Some(e);
                break;
            }
            k = e;
        }
        match closed {
            Some(end) => {
                blank(m, open, end);
                i = end;
            }
            None => i = j,
        }
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Shortcodes, autolinks, tags, link targets, reference labels (Markdown) and
/// URLs (both kinds).
fn inline(m: &mut [u8], markdown: bool) {
    urls(m);
    if !markdown {
        return;
    }
    let n = m.len();
    let mut i = 0;
    while let Some(p) = memchr::memchr3(b'{', b'<', b']', &m[i..]) {
        let at = i + p;
        i = at + 1;
        match m[at] {
            b'{' if at + 2 < n && m[at + 1] == b'{' && (m[at + 2] == b'<' || m[at + 2] == b'%') => {
                let close: &[u8] = if m[at + 2] == b'<' { b">}}" } else { b"%}}" };
                if let Some(q) = find(m, close, at + 3) {
                    blank(m, at, q + 3);
                    i = q + 3;
                }
            }
            b'<' => {
                if let Some(end) = angle(m, at) {
                    blank(m, at, end);
                    i = end;
                }
            }
            b']' if at + 1 < n && (m[at + 1] == b'(' || m[at + 1] == b'[') => {
                let open = m[at + 1];
                let close = if open == b'(' { b')' } else { b']' };
                let mut depth = 0usize;
                let mut k = at + 1;
                while k < n && m[k] != b'\n' {
                    if m[k] == open {
                        depth += 1;
                    } else if m[k] == close {
                        depth -= 1;
                        if depth == 0 {
                            blank(m, at + 1, k + 1);
                            i = k + 1;
                            break;
                        }
                    }
                    k += 1;
                }
            }
            _ => {}
        }
    }
}

/// Bare URLs: `http://`, `https://`, `ftp://`, `mailto:` and `www.`, not
/// inside a word, up to whitespace, `)`, `>`, `]`, `<` or `"`.
fn urls(m: &mut [u8]) {
    let mut ranges = Vec::new();
    for p in memchr::memmem::find_iter(m, b"://") {
        let scheme = m[..p]
            .iter()
            .rev()
            .take(6)
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let s = p - scheme;
        let name = &m[s..p];
        let known = [&b"http"[..], b"https", b"ftp"]
            .iter()
            .any(|k| name.eq_ignore_ascii_case(k));
        if known
            && (s == 0 || !is_word_byte(m[s - 1]))
            && let Some(e) = url_end(m, p + 3)
        {
            ranges.push((s, e));
        }
    }
    for prefix in [&b"www."[..], b"mailto:"] {
        for p in memchr::memmem::find_iter(m, prefix) {
            if (p == 0 || !is_word_byte(m[p - 1]))
                && let Some(e) = url_end(m, p + prefix.len())
            {
                ranges.push((p, e));
            }
        }
    }
    for (s, e) in ranges {
        blank(m, s, e);
    }
}

/// The end of a URL whose body starts at `from`, if it has one.
fn url_end(m: &[u8], from: usize) -> Option<usize> {
    let rest = &m[from..];
    let len = rest
        .iter()
        .position(|c| {
            matches!(
                c,
                b' ' | b'\t' | b'\n' | b'\r' | b')' | b'>' | b']' | b'<' | b'"'
            )
        })
        .unwrap_or(rest.len());
    (len > 0).then_some(from + len)
}

/// An autolink `<scheme:...>`, `<user@host>` or an HTML tag starting at `i`.
fn angle(m: &[u8], i: usize) -> Option<usize> {
    let n = m.len();
    let mut k = i + 1;
    if k < n && m[k] == b'/' {
        k += 1;
    }
    if k >= n || !m[k].is_ascii_alphabetic() {
        return None;
    }
    // Up to the closing `>` on the same line.
    let mut q = k;
    while q < n && m[q] != b'>' && m[q] != b'\n' {
        if m[q] == b'<' {
            return None;
        }
        q += 1;
    }
    (q < n && m[q] == b'>').then_some(q + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(t: &str) -> String {
        let p = prose(t, FileKind::Markdown);
        assert_eq!(p.text.len(), t.len(), "offsets stay true");
        p.text
    }

    #[test]
    fn masks_front_matter() {
        let t = "---\ntitle: Github\n---\nGithub\n";
        let m = md(t);
        assert!(!m[..20].contains("Github"));
        assert!(m.ends_with("Github\n"));
        let t = "+++\ntitle = \"Github\"\n+++\nGithub";
        assert_eq!(md(t).matches("Github").count(), 1);
    }

    #[test]
    fn masks_fenced_and_indented_code() {
        let t = "a Github\n\n```sh\ngithub x\n```\nb Github\n\n    github code\n\nc Github\n~~~\nGithub\n~~~\n";
        let m = md(t);
        assert_eq!(m.matches("Github").count(), 3);
        assert!(!m.contains("github"));
        assert!(!m.contains("```"));
    }

    #[test]
    fn indented_continuation_is_not_code() {
        let t = "- item\n\n    Github continues the item\n\npara\n    Github lazy continuation\n";
        assert_eq!(md(t).matches("Github").count(), 2);
    }

    #[test]
    fn masks_inline_code_comments_tags_and_shortcodes() {
        let t = "Use `github` and ``a ` github`` <!-- Github --> <a href=\"x\">Github</a> {{< ref \"github\" >}}";
        let m = md(t);
        assert_eq!(m.matches("Github").count(), 1);
        assert!(!m.contains("github"));
    }

    #[test]
    fn masks_urls_links_and_reference_definitions() {
        let t = "See [Github](https://github.com/x) and https://github.com/y and <https://github.com>\n[Github][github]\n[github]: https://github.com\n";
        let m = md(t);
        assert_eq!(m.matches("Github").count(), 2);
        assert!(!m.contains("github"));
    }

    #[test]
    fn switches_mask_passages_and_record_rule_switches() {
        let t = "a\n<!-- kapi off -->\nGithub\n<!-- kapi on -->\nGithub\n<!-- vale off -->\nGithub\n<!-- vale on -->\n<!-- kapi off: Quickcast -->x<!-- kapi on: Quickcast -->";
        let p = prose(t, FileKind::Markdown);
        assert_eq!(p.text.matches("Github").count(), 1);
        assert_eq!(p.switches.len(), 1);
        let s = &p.switches[0];
        assert_eq!(s.selectors, vec!["Quickcast".to_string()]);
        assert_eq!(&t[s.start..s.end], "x");
    }

    #[test]
    fn text_files_mask_urls_only() {
        let t = "`github` https://github.com/a <b>";
        let p = prose(t, FileKind::Text);
        assert_eq!(
            p.text,
            format!("`github` {} <b>", " ".repeat("https://github.com/a".len()))
        );
    }

    #[test]
    fn multibyte_text_stays_valid() {
        let t = "Ünïcode `cödé` <!-- ☃ --> naïve";
        let m = md(t);
        assert!(m.starts_with("Ünïcode"));
        assert!(m.ends_with("naïve"));
    }

    proptest::proptest! {
        #[test]
        fn masking_keeps_offsets_and_newlines(t in "(?s)[-a-zA-Z `~<>!{}%\\[\\]()#*+:/.\n\t\r\"'ü☃]{0,200}") {
            for kind in [FileKind::Markdown, FileKind::Text] {
                let p = prose(&t, kind);
                proptest::prop_assert_eq!(p.text.len(), t.len());
                for (a, b) in t.bytes().zip(p.text.bytes()) {
                    proptest::prop_assert!(a == b || b == b' ');
                    proptest::prop_assert_eq!(a == b'\n', b == b'\n');
                }
                for s in &p.switches {
                    proptest::prop_assert!(s.start <= s.end && s.end <= t.len());
                }
            }
        }
    }
}
