//! What in a file is prose: the masker of Markdown and plain text
//! ([`TextKind`] is the matcher's [`Masker`] for both). Everything else is
//! masked: replaced by spaces, byte for byte, so offsets, lines and columns
//! in the masked text are those of the file. Newlines are kept.
//!
//! Markdown is read by a CommonMark parser (`pulldown-cmark`, with tables,
//! footnotes, strikethrough, task lists and heading attributes): prose is
//! what CommonMark reads as text. Emphasis and other delimiters, code spans,
//! fenced and indented code, link targets, autolinks, reference definitions
//! and footnote labels are masked as CommonMark reads them; raw HTML keeps
//! the text between its tags (tags and comments are masked). Front matter
//! (`---` YAML, `+++` TOML) is masked first, Hugo shortcodes and bare URLs
//! last. Plain text: URLs only. Domains and paths (`github.com/...`,
//! `../.github`, `docs/foo.md`) are left to the matcher's word boundaries,
//! which refuse a form touching `.`, `/` or `-` that continues into a word.
//!
//! Switch comments: `<!-- kapi off -->` ... `<!-- kapi on -->` (and Vale's
//! `<!-- vale off -->` ... `<!-- vale on -->`) mask a passage for every rule;
//! `<!-- kapi off: Quickcast, 0n79tw -->` ... `<!-- kapi on: Quickcast -->`
//! (or `<!-- kapi on -->`) switch single rules off, by preferred form or id.
//! A comment written in code switches nothing.

use std::path::Path;

use super::case::fold_same_len;
use super::prose::{Masker, Prose, Switch, is_markup};

/// How a file is read: its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextKind {
    Markdown,
    /// AsciiDoc ([`super::asciidoc`]).
    #[serde(alias = "adoc")]
    AsciiDoc,
    /// reStructuredText ([`super::rst`]).
    #[serde(alias = "restructuredtext")]
    Rst,
    Text,
}

impl TextKind {
    /// By the file's extension: Markdown for `.md`, `.markdown`, `.mdx` (and
    /// similar), AsciiDoc for `.adoc`, `.asciidoc`, `.asc`,
    /// reStructuredText for `.rst`, `.rest`; text otherwise.
    pub fn of_path(path: &Path) -> Self {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext.to_ascii_lowercase().as_str() {
            "md" | "markdown" | "mdx" | "mdown" | "mkd" | "mkdn" => TextKind::Markdown,
            "adoc" | "asciidoc" | "asc" => TextKind::AsciiDoc,
            "rst" | "rest" => TextKind::Rst,
            _ => TextKind::Text,
        }
    }

    /// The name `kapi.toml` gives the format.
    pub fn name(self) -> &'static str {
        match self {
            TextKind::Markdown => "markdown",
            TextKind::AsciiDoc => "asciidoc",
            TextKind::Rst => "rst",
            TextKind::Text => "text",
        }
    }
}

/// The masker of each kind of text: Markdown, AsciiDoc and
/// reStructuredText are scanned, loosened, before they are masked; plain
/// text is masked first (only its URLs are, cheaply).
impl Masker for TextKind {
    fn prose(&self, text: &str) -> Prose {
        prose(text, *self)
    }

    fn loosened(&self, text: &str) -> Option<String> {
        match self {
            TextKind::Markdown | TextKind::Rst => Some(loosened(text)),
            TextKind::AsciiDoc => {
                // A block title's leading `.` is masked (a joiner, which
                // loosening keeps elsewhere).
                let mut l = loosened(text).into_bytes();
                let mut at = 0;
                while at < l.len() {
                    if l[at] == b'.' {
                        l[at] = b' ';
                    }
                    match memchr::memchr(b'\n', &l[at..]) {
                        Some(p) => at += p + 1,
                        None => break,
                    }
                }
                let start = if l.starts_with(BOM) { BOM.len() } else { 0 };
                if l.get(start) == Some(&b'.') {
                    l[start] = b' ';
                }
                // Only ASCII bytes were replaced.
                Some(String::from_utf8(l).unwrap_or_default())
            }
            TextKind::Text => None,
        }
    }
}

/// Mask what is not prose.
pub fn prose(text: &str, kind: TextKind) -> Prose {
    let mut m = text.as_bytes().to_vec();
    let mut switches = Vec::new();
    // A UTF-8 byte order mark is not prose, and what follows it is read as
    // the file's start (front matter, markers).
    let bom = if m.starts_with(BOM) {
        blank(&mut m, 0, BOM.len());
        BOM.len()
    } else {
        0
    };
    let body = &mut m[bom..];
    match kind {
        TextKind::Markdown => {
            front_matter(body);
            let read = commonmark(body);
            // Code first: a comment or a managed-block marker written in code
            // is code, not a switch or a marker.
            for r in &read.code {
                blank(body, r.start, r.end);
            }
            managed_block(body);
            switches = code_and_comments(body);
            keep_only(body, &read.keep);
            inline(body, true);
        }
        TextKind::AsciiDoc => switches = super::asciidoc::mask(body),
        TextKind::Rst => switches = super::rst::mask(body),
        TextKind::Text => inline(body, false),
    }
    for s in &mut switches {
        s.start += bom;
        s.end += bom;
    }
    // Every masked range starts and ends at an ASCII byte (or a line end), so
    // whole characters are replaced and the bytes stay UTF-8.
    let text =
        String::from_utf8(m).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Prose { text, switches }
}

/// What CommonMark (with tables, footnotes, strikethrough, task lists and
/// heading attributes) reads in a Markdown body: the byte ranges that are
/// text (and raw HTML, whose tags and comments are masked later), and the
/// ranges that are code.
struct Read {
    keep: Vec<std::ops::Range<usize>>,
    code: Vec<std::ops::Range<usize>>,
}

fn commonmark(body: &[u8]) -> Read {
    use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};
    let mut read = Read {
        keep: Vec::new(),
        code: Vec::new(),
    };
    // Masking replaces ASCII ranges only, so the body is still UTF-8.
    let Ok(text) = std::str::from_utf8(body) else {
        read.keep.push(0..body.len());
        return read;
    };
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES;
    // Inside an autolink (`<https://...>`, `<a@b.c>`) the text is an address.
    let mut autolink = 0usize;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Text(_) if autolink == 0 => read.keep.push(range),
            Event::Html(_) | Event::InlineHtml(_) => read.keep.push(range),
            Event::Code(_) => read.code.push(range),
            Event::Start(Tag::CodeBlock(_)) => read.code.push(range),
            Event::Start(Tag::Link {
                link_type: LinkType::Autolink | LinkType::Email,
                ..
            }) => autolink += 1,
            Event::End(TagEnd::Link) if autolink > 0 => autolink -= 1,
            _ => {}
        }
    }
    read
}

/// Blank everything outside `keep` (ranges in order of appearance).
fn keep_only(m: &mut [u8], keep: &[std::ops::Range<usize>]) {
    let mut ranges: Vec<_> = keep.to_vec();
    ranges.sort_by_key(|r| r.start);
    let mut at = 0;
    for r in ranges {
        if r.start > at {
            blank(m, at, r.start);
        }
        at = at.max(r.end);
    }
    let len = m.len();
    blank(m, at, len);
}

pub(super) fn blank(m: &mut [u8], start: usize, end: usize) {
    let end = end.min(m.len());
    for b in &mut m[start..end] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// Lines as (start, end-without-newline, next-line-start).
pub(super) fn lines(m: &[u8]) -> Vec<(usize, usize, usize)> {
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

pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Front matter is looked for only this far into a file.
const FRONT_MATTER_MAX_BYTES: usize = 64 * 1024;

/// YAML front matter: a first line that is exactly `---`, a closing `---` or
/// `...` line starting within the first 64 KiB, and between them lines that
/// read as YAML keys (`key: value`). A thematic break followed by prose is
/// not front matter. TOML front matter: between `+++` lines.
fn front_matter(m: &mut [u8]) {
    if !(m.starts_with(b"---") || m.starts_with(b"+++")) {
        return;
    }
    let ls: Vec<_> = lines(m)
        .into_iter()
        .take_while(|&(s, _, _)| s < FRONT_MATTER_MAX_BYTES)
        .collect();
    let Some(&(s0, e0, body_start)) = ls.first() else {
        return;
    };
    let first = &m[s0..e0];
    let yaml = if first == b"---" {
        true
    } else if trim_end(first) == b"+++" {
        false
    } else {
        return;
    };
    for &(s, e, next) in ls.iter().skip(1) {
        let line = &m[s..e];
        let closes = if yaml {
            line == b"---" || line == b"..."
        } else {
            trim_end(line) == b"+++"
        };
        if closes {
            if !yaml || looks_like_yaml(&m[body_start..s]) {
                blank(m, 0, next);
            }
            return;
        }
    }
}

/// Whether a block reads as a YAML mapping: its first line that is neither
/// blank nor a comment is a `key:` line, and so is every other unindented
/// line (except `- ` sequence items and comments).
fn looks_like_yaml(block: &[u8]) -> bool {
    let mut keys = 0;
    for (s, e, _) in lines(block) {
        let line = &block[s..e];
        let t = trim_end(line);
        if t.is_empty() || t[0] == b'#' {
            continue;
        }
        if yaml_key_line(t) {
            keys += 1;
        } else if keys == 0 || !(t[0] == b' ' || t[0] == b'\t' || t == b"-" || t.starts_with(b"- "))
        {
            return false;
        }
    }
    keys > 0
}

/// `key:` or `key: value`, the key a quoted string or a run without blanks.
fn yaml_key_line(t: &[u8]) -> bool {
    let colon = match t[0] {
        q @ (b'"' | b'\'') => match t[1..].iter().position(|&c| c == q) {
            Some(p) if t.get(p + 2) == Some(&b':') => p + 2,
            _ => return false,
        },
        _ => match t.iter().position(|&c| c == b':') {
            Some(p) if p > 0 && !t[..p].iter().any(|&c| c == b' ' || c == b'\t') => p,
            _ => return false,
        },
    };
    matches!(t.get(colon + 1), None | Some(b' ' | b'\t'))
}

/// kapi's managed block in a rules file (AGENTS.md, CLAUDE.md): from a line
/// starting with the begin marker through the end marker line. It lists the
/// rules and notes in force, written by kapi; it is not the project's prose.
/// Markers inside fenced code (already masked) do not count; a begin marker
/// never closed masks nothing.
fn managed_block(m: &mut [u8]) {
    let begin = crate::formats::rules_block::BEGIN.as_bytes();
    let end = crate::formats::rules_block::END.as_bytes();
    let mut open: Option<usize> = None;
    for (s, e, next) in lines(m) {
        let line = trim_start(&m[s..e]);
        match open {
            None if line.starts_with(begin) => open = Some(s),
            Some(from) if trim_end(line) == end => {
                blank(m, from, next);
                open = None;
            }
            _ => {}
        }
    }
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    &b[n..]
}

fn trim_end(b: &[u8]) -> &[u8] {
    let mut e = b.len();
    while e > 0 && (b[e - 1] == b' ' || b[e - 1] == b'\t') {
        e -= 1;
    }
    &b[..e]
}

pub(super) enum Event {
    AllOff,
    AllOn,
    Off(Vec<String>),
    On(Vec<String>),
}

pub(super) fn switch_event(comment: &str) -> Option<Event> {
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

/// Inline code spans and HTML comments, in one pass from left to right:
/// whichever opens first wins (as in CommonMark), so a comment written
/// inside code is code (`` `<!-- vale off -->` `` switches nothing off), and
/// a backtick inside a comment is part of the comment. Comments are masked
/// and read for switches.
fn code_and_comments(m: &mut [u8]) -> Vec<Switch> {
    let mut events: Vec<(usize, usize, Event)> = Vec::new();
    let mut i = 0;
    while let Some(p) = memchr::memchr2(b'`', b'<', &m[i..]) {
        let at = i + p;
        if m[at] == b'`' {
            let j = run_end(m, at, b'`');
            match code_span_end(m, j, j - at) {
                Some(end) => {
                    blank(m, at, end);
                    i = end;
                }
                None => i = j,
            }
            continue;
        }
        if !m[at..].starts_with(b"<!--") {
            i = at + 1;
            continue;
        }
        let end = match find(m, b"-->", at + 4) {
            Some(q) => q + 3,
            None => m.len(),
        };
        let inner_end = end.saturating_sub(3).max(at + 4);
        if let Some(ev) = std::str::from_utf8(&m[at + 4..inner_end])
            .ok()
            .and_then(switch_event)
        {
            events.push((at, end, ev));
        }
        blank(m, at, end);
        i = end;
    }
    switches_of(m, events)
}

/// The passages the switch comments `events` (start, end, event; in order)
/// open and close: a passage every rule is switched off in is blanked; one
/// that switches single rules off is returned.
pub(super) fn switches_of(m: &mut [u8], events: Vec<(usize, usize, Event)>) -> Vec<Switch> {
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
                    close(ALL_RULES.into(), from, start, &mut switches);
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
        close(ALL_RULES.into(), from, len, &mut switches);
    }
    let len = m.len();
    for (sel, from) in open {
        close(sel, from, len, &mut switches);
    }
    switches
}

/// The selector of a passage switched off for every rule (masked too; the
/// switch holds it for the rules matched in raw text, Vale's `scope: raw`).
pub(crate) const ALL_RULES: &str = "*";

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

/// The end of the inline code span whose opening run of `run` backticks
/// ends at `j`: a closing run of exactly `run` backticks before a blank line.
fn code_span_end(m: &[u8], j: usize, run: usize) -> Option<usize> {
    let mut k = j;
    while let Some(q) = memchr::memchr2(b'`', b'\n', &m[k..]) {
        let q = k + q;
        if m[q] == b'\n' {
            if blank_line_at(m, q + 1) {
                return None;
            }
            k = q + 1;
            continue;
        }
        let e = run_end(m, q, b'`');
        if e - q == run {
            return Some(e);
        }
        k = e;
    }
    None
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
    let mut lines: Option<BracketLine> = None;
    let mut unclosed = [usize::MAX; 2];
    while let Some(p) = memchr::memchr3(b'{', b'<', b']', &m[i..]) {
        let at = i + p;
        i = at + 1;
        match m[at] {
            b'{' if at + 2 < n && m[at + 1] == b'{' && (m[at + 2] == b'<' || m[at + 2] == b'%') => {
                let kind = usize::from(m[at + 2] == b'%');
                let close: &[u8] = [&b">}}"[..], b"%}}"][kind];
                // A shortcode left open once is open to the end: later ones
                // are not searched for again (that made runs of them
                // quadratic).
                if at + 3 >= unclosed[kind] {
                    continue;
                }
                match find(m, close, at + 3) {
                    Some(q) => {
                        blank(m, at, q + 3);
                        i = q + 3;
                    }
                    None => unclosed[kind] = at + 3,
                }
            }
            b'<' => {
                if let Some(end) = angle(m, at) {
                    blank(m, at, end);
                    i = end;
                }
            }
            b']' if at + 1 < n && (m[at + 1] == b'(' || m[at + 1] == b'[') => {
                // The bracket closing the one at `at + 1`, from the line's
                // table (built once per line: scanning to the line's end
                // for every `](` made a line of them quadratic).
                if lines.as_ref().is_none_or(|l| at + 1 >= l.end) {
                    lines = Some(BracketLine::of(m, at + 1));
                }
                let line = lines.as_ref().expect("just built");
                if let Some(k) = line.closing(at + 1) {
                    blank(m, at + 1, k + 1);
                    i = k + 1;
                }
            }
            _ => {}
        }
    }
}

/// The matching brackets of the rest of one line: for each `(` and `[`
/// from `start` to the line's end, where the bracket of its kind that
/// closes it is (nested brackets of the same kind balanced, the other kind
/// ignored), if one does.
struct BracketLine {
    start: usize,
    end: usize,
    closing: Vec<u32>,
}

impl BracketLine {
    const NONE: u32 = u32::MAX;

    fn of(m: &[u8], start: usize) -> Self {
        let end = memchr::memchr(b'\n', &m[start..]).map_or(m.len(), |p| start + p);
        let mut closing = vec![Self::NONE; end - start];
        for (open, close) in [(b'(', b')'), (b'[', b']')] {
            let mut stack: Vec<usize> = Vec::new();
            for (k, &b) in m.iter().enumerate().take(end).skip(start) {
                if b == open {
                    stack.push(k);
                } else if b == close
                    && let Some(o) = stack.pop()
                {
                    closing[o - start] = (k - start) as u32;
                }
            }
        }
        BracketLine {
            start,
            end,
            closing,
        }
    }

    fn closing(&self, at: usize) -> Option<usize> {
        let c = *self.closing.get(at.checked_sub(self.start)?)?;
        (c != Self::NONE).then(|| self.start + c as usize)
    }
}

/// Bare URLs: `http://`, `https://`, `ftp://`, `mailto:` and `www.`, not
/// inside a word, up to whitespace, `)`, `>`, `]`, `<` or `"`. Linear in
/// the text: a run of URLs with no end between them shares one scan for
/// its end, and overlapping ranges are blanked once.
pub(super) fn urls(m: &mut [u8]) {
    urls_ending(m, false);
}

/// The text of a Markdown file with its markup characters ([`is_markup`])
/// and its bare URLs (each up to its first markup character) blanked:
/// every byte that masking keeps is kept here too, so a form that the
/// masked text holds on word boundaries is found here on word boundaries.
/// Case-folded as [`super::case::case_key_same_len`] folds. This is the
/// Markdown masker's [`Masker::loosened`].
pub(crate) fn loosened(text: &str) -> String {
    const LOOSE: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 256 {
            let b = i as u8;
            t[i] = if is_markup(b) {
                b' '
            } else {
                b.to_ascii_lowercase()
            };
            i += 1;
        }
        t
    };
    let mut m = text.as_bytes().to_vec();
    urls_ending(&mut m, true);
    if !text.is_ascii() {
        // URLs were blanked at ASCII bytes only: still UTF-8.
        fold_same_len(&mut m);
    }
    for b in &mut m {
        *b = LOOSE[*b as usize];
    }
    // Only ASCII bytes were replaced.
    String::from_utf8(m).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Blank bare URLs, each up to where [`UrlEnds::end`] says; with `at_markup`,
/// only up to its first markup character after the scheme (masking may
/// have blanked the rest of the URL's text before the URL is read, so the
/// text after it may be prose).
fn urls_ending(m: &mut [u8], at_markup: bool) {
    let end = |ends: &mut UrlEnds, m: &[u8], body: usize| -> Option<usize> {
        let e = ends.end(m, body)?;
        Some(if at_markup {
            m[body..e]
                .iter()
                .position(|&b| is_markup(b))
                .map_or(e, |i| body + i)
        } else {
            e
        })
    };
    let mut ranges = Vec::new();
    let mut ends = UrlEnds::default();
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
            && let Some(e) = end(&mut ends, m, p + 3)
        {
            ranges.push((s, e));
        }
    }
    for prefix in [&b"www."[..], b"mailto:"] {
        let mut ends = UrlEnds::default();
        for p in memchr::memmem::find_iter(m, prefix) {
            if (p == 0 || !is_word_byte(m[p - 1]))
                && let Some(e) = end(&mut ends, m, p + prefix.len())
            {
                ranges.push((p, e));
            }
        }
    }
    ranges.sort_unstable();
    let mut blanked = 0;
    for (s, e) in ranges {
        let s = s.max(blanked);
        if s < e {
            blank(m, s, e);
            blanked = e;
        }
    }
}

/// The ends of URLs whose bodies start at increasing offsets: the last
/// scan is remembered (no end lies in `from..end`), so a body starting
/// inside it ends where it did.
#[derive(Default)]
struct UrlEnds {
    from: usize,
    end: usize,
}

impl UrlEnds {
    /// The end of a URL whose body starts at `from`, if it has one.
    fn end(&mut self, m: &[u8], from: usize) -> Option<usize> {
        if !(self.from <= from && from <= self.end && self.end > 0) {
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
            *self = UrlEnds {
                from,
                end: from + len,
            };
        }
        (self.end > from).then_some(self.end)
    }
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
        let p = prose(t, TextKind::Markdown);
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

    /// A line of 100,000 unclosed `](`: each is matched from one table per
    /// line (before, each scanned to the line's end: minutes for this line).
    /// Runs of URLs with no end between them, and of unclosed shortcodes:
    /// one scan each (before: 27 s for a 350 KB line of `http://`).
    #[test]
    fn runs_of_urls_and_unclosed_shortcodes_stay_linear() {
        let t = "http://".repeat(100_000) + " Github\n" + &"{{< ".repeat(100_000) + "Github\n";
        let m = md(&t);
        assert_eq!(m.len(), t.len());
        assert_eq!(m.matches("Github").count(), 2);
        assert!(!m.contains("http"));
    }

    #[test]
    fn many_unclosed_link_targets_on_one_line_stay_linear() {
        let t = "[x](".repeat(100_000) + " Github [a](Github) [b](x (Github)) Github\nGithub](y)\n";
        let m = md(&t);
        assert_eq!(m.len(), t.len());
        assert_eq!(
            m.matches("Github").count(),
            3,
            "link targets masked, prose kept"
        );
    }

    #[test]
    fn masks_urls_links_and_reference_definitions() {
        let t = "See [Github](https://github.com/x) and https://github.com/y and <https://github.com>\n[Github][github]\n\n[github]: https://github.com\n";
        let m = md(t);
        assert_eq!(m.matches("Github").count(), 2);
        assert!(!m.contains("github"));
    }

    #[test]
    fn switches_mask_passages_and_record_rule_switches() {
        let t = "a\n<!-- kapi off -->\nGithub\n<!-- kapi on -->\nGithub\n<!-- vale off -->\nGithub\n<!-- vale on -->\n<!-- kapi off: Quickcast -->x<!-- kapi on: Quickcast -->";
        let p = prose(t, TextKind::Markdown);
        assert_eq!(p.text.matches("Github").count(), 1);
        // A passage off for every rule is masked, and a switch of every
        // rule (for the rules matched in raw text).
        let (all, one): (Vec<_>, Vec<_>) = p
            .switches
            .iter()
            .partition(|s| s.selectors == [ALL_RULES.to_string()]);
        assert_eq!(all.len(), 2);
        assert_eq!(&t[all[0].start..all[0].end], "\nGithub\n");
        assert_eq!(one.len(), 1);
        let s = one[0];
        assert_eq!(s.selectors, vec!["Quickcast".to_string()]);
        assert_eq!(&t[s.start..s.end], "x");
    }

    #[test]
    fn kapis_managed_block_is_not_prose() {
        let t = "Github\n<!-- kapi:begin (managed by kapi) -->\n- Write **GitHub**, not `Github`\n- Never write Github in titles.\n<!-- kapi:end -->\nGithub\n";
        assert_eq!(md(t).matches("Github").count(), 2);
        assert!(!md(t).contains("Never"));
        // A marker in a fenced example opens no block; an unclosed one masks
        // nothing past its own line.
        let f = "```\n<!-- kapi:begin -->\n```\nGithub\n<!-- kapi:end -->\n";
        assert_eq!(md(f).matches("Github").count(), 1);
        let u = "<!-- kapi:begin -->\nGithub\n";
        assert_eq!(md(u).matches("Github").count(), 1);
        // Plain text files hold no managed block.
        let p = prose(t, TextKind::Text);
        assert_eq!(p.text.matches("Github").count(), 4);
    }

    #[test]
    fn comments_inside_inline_code_are_code() {
        let t = "Use `<!-- vale off -->` to silence Vale. Github\n\nGithub\n";
        assert_eq!(md(t).matches("Github").count(), 2);
        let t = "Comments start with `<!--`. Github\n\nGithub `-->` Github\n";
        assert_eq!(md(t).matches("Github").count(), 3);
        // A backtick inside a comment stays in the comment.
        let t = "<!-- it's ` here -->Github ` x\n";
        assert_eq!(md(t).matches("Github").count(), 1);
        let p = prose("a `<!-- kapi off: GitHub -->` Github", TextKind::Markdown);
        assert!(p.switches.is_empty());
    }

    #[test]
    fn a_thematic_break_is_not_front_matter() {
        let t = "---\nGithub is great, really.\n---\nGithub\n";
        assert_eq!(md(t).matches("Github").count(), 2);
        let t = "--- \ntitle: Github\n---\n";
        assert_eq!(md(t).matches("Github").count(), 1);
        let t = "---\n# c\ntitle: Github\ntags:\n- a\n  - b\n\"q k\": v\n...\nGithub\n";
        assert_eq!(md(t).matches("Github").count(), 1);
        let far = format!(
            "---\ntitle: x\n{}---\nGithub\n",
            "k: v\n".repeat(70_000 / 5)
        );
        assert_eq!(md(&far).matches("Github").count(), 1);
        assert!(md(&far).contains("title"));
    }

    #[test]
    fn a_byte_order_mark_is_stripped_before_front_matter_and_markers() {
        let t = "\u{feff}---\ntitle: Github\n---\nGithub\n";
        let m = md(t);
        assert!(m.starts_with("   "));
        assert_eq!(m.matches("Github").count(), 1);
        let t =
            "\u{feff}<!-- kapi:begin -->\nGithub\n<!-- kapi:end -->\nGithub <!-- kapi off: x -->";
        let p = prose(t, TextKind::Markdown);
        assert_eq!(p.text.matches("Github").count(), 1);
        assert_eq!(&t[p.switches[0].start..p.switches[0].end], "");
        assert_eq!(p.switches[0].start, t.len());
    }

    #[test]
    fn text_files_mask_urls_only() {
        let t = "`github` https://github.com/a <b>";
        let p = prose(t, TextKind::Text);
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

    /// `inline` as it was, scanning from each `](` and each `://` to the
    /// line's end and searching for every shortcode's close: the reference
    /// the linear version must agree with.
    fn inline_by_scanning(m: &mut [u8]) {
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
        let mut ranges = Vec::new();
        for p in memchr::memmem::find_iter(m, b"://") {
            let scheme = m[..p]
                .iter()
                .rev()
                .take(6)
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
            let s = p - scheme;
            let known = [&b"http"[..], b"https", b"ftp"]
                .iter()
                .any(|k| m[s..p].eq_ignore_ascii_case(k));
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
        let n = m.len();
        let mut i = 0;
        while let Some(p) = memchr::memchr3(b'{', b'<', b']', &m[i..]) {
            let at = i + p;
            i = at + 1;
            match m[at] {
                b'{' if at + 2 < n
                    && m[at + 1] == b'{'
                    && (m[at + 2] == b'<' || m[at + 2] == b'%') =>
                {
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

    proptest::proptest! {
        #[test]
        fn inline_masking_agrees_with_scanning(
            t in "([\\[\\]()x \n<>{}%,./\"]|http://|ftp://|www\\.|mailto:|\\{\\{<|\\{\\{%|>\\}\\}|%\\}\\}|<a |</a>){0,60}"
        ) {
            let mut expected = t.clone().into_bytes();
            inline_by_scanning(&mut expected);
            let mut got = t.clone().into_bytes();
            inline(&mut got, true);
            proptest::prop_assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(expected).unwrap());
        }

        #[test]
        fn masking_keeps_offsets_and_newlines(t in "(?s)[-a-zA-Z `~<>!{}%\\[\\]()#*+:/.\n\t\r\"'ü☃]{0,200}") {
            for kind in [TextKind::Markdown, TextKind::Text] {
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
