//! What in a reStructuredText file is prose, written from docutils'
//! reStructuredText Markup Specification: the Rust parsers of RST
//! (`rst_parser`, `rst_renderer`) are unmaintained and keep no byte
//! offsets, so this is a masker: it blanks, byte for byte, what is not
//! prose, and `ci/bench-formats` compares what it keeps with what docutils
//! renders as text over real documentation.
//!
//! Prose: paragraphs, section titles, list items, table cells, block
//! quotes, footnote and citation bodies, field bodies, definition lists,
//! the bodies of directives that hold prose (admonitions, `topic`,
//! `sidebar`, `figure` captions, `only`, and any directive kapi does not
//! know), the titles of `admonition`, `topic`, `sidebar`, `rubric`,
//! `table`, `list-table`, `csv-table` and `contents`, the text of
//! `.. note:: text` and the other admonitions, and the text of
//! `.. versionadded:: 3.2 text` after its version; the text of hyperlink
//! references (`` `text <url>`_ ``, `` :ref:`text <label>` ``).
//! Not prose: literal blocks (after `::`, indented or quoted), doctest
//! blocks (`>>>`), directive names, arguments and options, the bodies of
//! code-like directives (`code-block`, `literalinclude`, `math`, `raw`,
//! `toctree`, ...), inline literals (``` ``x`` ```), roles that name code or
//! a target (`:func:`, `:ref:`, `:doc:`, any role kapi does not know; the
//! text of `emphasis`, `strong`, `sub`, `sup`, `title-reference`, `abbr`,
//! `dfn`, `guilabel`, `menuselection` and `term` is prose), substitution
//! definitions and references (`|name|`), comments (`..`), hyperlink
//! targets (`.. _name: url`, `__ url`), footnote and citation labels and
//! references (`[1]_`), field names (`:Author:`), option list options,
//! section adornments, transitions and table borders, list markers,
//! e-mail addresses.
//!
//! Switches: `.. kapi off` ... `.. kapi on` (and `.. vale off`), and
//! `.. kapi off: Quickcast` for single rules, as in Markdown.

use super::markdown::{Event, blank, lines, switch_event, switches_of, urls};
use super::prose::Switch;

/// Directives whose content is not prose.
const CODE_DIRECTIVES: &[&str] = &[
    "code",
    "code-block",
    "sourcecode",
    "literalinclude",
    "include",
    "math",
    "raw",
    "highlight",
    "productionlist",
    "toctree",
    "doctest",
    "testcode",
    "testoutput",
    "testsetup",
    "testcleanup",
    "ipython",
    "jupyter-execute",
    "graphviz",
    "digraph",
    "graph",
    "plantuml",
    "uml",
    "mermaid",
    "autosummary",
    "automodule",
    "autoclass",
    "autofunction",
    "parsed-literal",
    "tabularcolumns",
    "prompt",
    "program-output",
    "command-output",
    "literal",
    "image",
    "meta",
    "default-role",
    "role",
    "sectnum",
    "target-notes",
    "csv-table-data",
];

/// Directives whose argument is prose: a title, or an admonition's text.
const TEXT_ARGUMENT: &[&str] = &[
    "admonition",
    "topic",
    "sidebar",
    "rubric",
    "table",
    "list-table",
    "csv-table",
    "contents",
    "centered",
    "note",
    "warning",
    "tip",
    "hint",
    "important",
    "caution",
    "danger",
    "error",
    "attention",
    "seealso",
    "glossary",
    "epigraph",
    "highlights",
    "pull-quote",
    "line-block",
    "title",
];

/// Directives whose first argument is a version and whose rest is prose.
const VERSION_DIRECTIVES: &[&str] = &[
    "versionadded",
    "versionchanged",
    "deprecated",
    "versionremoved",
    "version-added",
    "version-changed",
    "version-deprecated",
    "version-removed",
];

/// Roles whose text is prose (any other role names code or a target).
const TEXT_ROLES: &[&[u8]] = &[
    b"emphasis",
    b"strong",
    b"sub",
    b"sup",
    b"subscript",
    b"superscript",
    b"title-reference",
    b"title",
    b"t",
    b"abbr",
    b"dfn",
    b"guilabel",
    b"menuselection",
    b"term",
];

fn indent(line: &[u8]) -> usize {
    let mut n = 0;
    for &b in line {
        match b {
            b' ' => n += 1,
            b'\t' => n = (n / 8 + 1) * 8,
            _ => break,
        }
    }
    n
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let b = &b[start..];
    let end = b.len()
        - b.iter()
            .rev()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
    &b[..end]
}

/// Mask what in the reStructuredText text `m` is not prose; the passages
/// where rules are switched off.
pub fn mask(m: &mut [u8]) -> Vec<Switch> {
    let ls = lines(m);
    let mut events: Vec<(usize, usize, Event)> = Vec::new();
    let line_of = |k: usize| -> (usize, usize) { (ls[k].0, ls[k].1) };
    // The last line of the block indented more than `ind` starting after
    // line `k` (blank lines inside it included, trailing ones not): `k`
    // when there is none.
    let block_end = |m: &[u8], k: usize, ind: usize| -> usize {
        let mut last = k;
        for q in k + 1..ls.len() {
            let l = &m[ls[q].0..ls[q].1];
            if trim(l).is_empty() {
                continue;
            }
            if indent(l) <= ind {
                break;
            }
            last = q;
        }
        last
    };
    let mut para_start = true;
    // The indent of the list (and of the option list) being read: its next
    // item may follow without a blank line.
    let mut list_at: Option<usize> = None;
    let mut options_at: Option<usize> = None;
    // The open grid table: where its columns' `+` are in a line, and for
    // each column the indent of a paragraph that ended in `::` and whether
    // its literal block is being read.
    let mut grid: Option<Grid> = None;
    let mut i = 0;
    while i < ls.len() {
        let (s, e) = line_of(i);
        let line = &m[s..e];
        let t = trim(line);
        if t.is_empty() {
            para_start = true;
            i += 1;
            continue;
        }
        let ind = indent(line);
        let lead = line.iter().take_while(|c| c.is_ascii_whitespace()).count();
        let off = s + lead;
        // Explicit markup: comments, targets, footnotes, substitution
        // definitions, directives.
        if t == b".." || t.starts_with(b".. ") {
            let rest = trim(&t[2..]);
            para_start = true;
            if rest.starts_with(b"[")
                && let Some(c) = rest.iter().position(|&b| b == b']')
            {
                // A footnote or citation: its label is masked, its body is prose.
                let label_end = off + (t.len() - rest.len()) + c + 1;
                blank(m, off, label_end);
                i += 1;
                continue;
            }
            if let Some((name, after)) = directive(rest) {
                let name = name.to_ascii_lowercase();
                // Where the arguments start in the file, and the version's
                // length (for `versionadded` and its kin).
                let arg_at = off + t.len() - after.len();
                let arg = trim(after);
                let arg_start =
                    arg_at + after.iter().take_while(|c| c.is_ascii_whitespace()).count();
                let version = arg.iter().take_while(|c| !c.is_ascii_whitespace()).count();
                let has_arg = !arg.is_empty();
                blank(m, off, arg_at);
                if has_arg {
                    if VERSION_DIRECTIVES.contains(&name.as_str()) {
                        blank(m, arg_start, arg_start + version);
                    } else if !TEXT_ARGUMENT.contains(&name.as_str()) {
                        blank(m, arg_start, e);
                    }
                }
                let end = block_end(m, i, ind);
                // Arguments continued on the next lines, then options, up
                // to the first blank line.
                let mut k = i + 1;
                let mut in_options = false;
                while k <= end {
                    let (ks, ke) = line_of(k);
                    let kt = trim(&m[ks..ke]);
                    if kt.is_empty() {
                        break;
                    }
                    if kt.starts_with(b":") && field_name_len(kt).is_some() {
                        in_options = true;
                    }
                    if in_options || !TEXT_ARGUMENT.contains(&name.as_str()) {
                        blank(m, ks, ke);
                    }
                    k += 1;
                }
                if CODE_DIRECTIVES.contains(&name.as_str()) {
                    blank(m, s, ls[end].1);
                    i = end + 1;
                } else {
                    // The content is read as prose, line by line.
                    i = k;
                }
                continue;
            }
            // Comments, hyperlink targets and substitution definitions,
            // with the block indented under them.
            if !(rest.starts_with(b"_") || rest.starts_with(b"|"))
                && let Some(ev) = std::str::from_utf8(rest).ok().and_then(switch_event)
            {
                events.push((s, e, ev));
            }
            let end = if t == b".."
                && i + 1 < ls.len()
                && trim(&m[ls[i + 1].0..ls[i + 1].1]).is_empty()
            {
                i
            } else {
                block_end(m, i, ind)
            };
            blank(m, s, ls[end].1);
            i = end + 1;
            continue;
        }
        if t.starts_with(b"__ ") || t == b"__" {
            let end = block_end(m, i, ind);
            blank(m, s, ls[end].1);
            i = end + 1;
            continue;
        }
        // Section adornments, transitions and table borders.
        if adornment(t) || table_border(t) {
            grid = (t[0] == b'+' && t.len() > 1 && t[t.len() - 1] == b'+').then(|| {
                let bounds: Vec<usize> = memchr::memchr_iter(b'+', line).collect();
                let n = bounds.len();
                Grid {
                    bounds,
                    literal: vec![None; n],
                    colons: vec![None; n],
                }
            });
            blank(m, s, e);
            para_start = true;
            i += 1;
            continue;
        }
        if let Some(g) = grid.as_mut() {
            if t[0] == b'|' {
                g.row(m, s, e);
                para_start = false;
                i += 1;
                continue;
            } else {
                grid = None;
            }
        }
        // Doctest blocks.
        if para_start && t.starts_with(b">>>") {
            let mut end = i;
            while end + 1 < ls.len() && !trim(&m[ls[end + 1].0..ls[end + 1].1]).is_empty() {
                end += 1;
            }
            blank(m, s, ls[end].1);
            i = end + 1;
            continue;
        }
        // Markers: field names, options, list markers.
        let mut body = ind;
        let ends_in_colons = t.ends_with(b"::");
        let colons = if t == b"::" || t.ends_with(b" ::") {
            3.min(t.len())
        } else {
            1
        };
        let tlen = t.len();
        let marker = if t.starts_with(b":")
            && let Some(n) = field_name_len(t)
        {
            Some(n)
        } else if (para_start || options_at == Some(ind))
            && let Some(n) = option_len(t)
        {
            // An option list starts a block (`--x` inside a paragraph is
            // its text); its items may follow one another.
            options_at = Some(ind);
            Some(n)
        } else if (para_start || list_at == Some(ind))
            && let Some(n) = list_marker(t)
        {
            list_at = Some(ind);
            body = ind + n;
            Some(n)
        } else {
            None
        };
        if marker.is_none() {
            if list_at.is_some_and(|l| ind <= l) {
                list_at = None;
            }
            if options_at.is_some_and(|l| ind <= l) {
                options_at = None;
            }
        }
        if let Some(n) = marker {
            blank(m, off, off + n);
        }
        para_start = false;
        // A paragraph ending in `::` introduces a literal block.
        let next_blank = i + 1 >= ls.len() || trim(&m[ls[i + 1].0..ls[i + 1].1]).is_empty();
        if ends_in_colons && next_blank {
            blank(m, off + tlen - colons, off + tlen);
            // The literal block: indented more than the paragraph, or quoted.
            let first = (i + 1..ls.len()).find(|&q| !trim(&m[ls[q].0..ls[q].1]).is_empty());
            if let Some(q) = first {
                let l = &m[ls[q].0..ls[q].1];
                let (lind, lt) = (indent(l), trim(l));
                let para_ind = body.min(ind);
                if lind > para_ind {
                    let end = block_end(m, q - 1, para_ind);
                    blank(m, ls[q].0, ls[end].1);
                    i = end + 1;
                    para_start = true;
                    continue;
                }
                if lind == para_ind && lt.first().is_some_and(|c| c.is_ascii_punctuation()) {
                    let mut end = q;
                    while end + 1 < ls.len() && !trim(&m[ls[end + 1].0..ls[end + 1].1]).is_empty() {
                        end += 1;
                    }
                    blank(m, ls[q].0, ls[end].1);
                    i = end + 1;
                    para_start = true;
                    continue;
                }
            }
        }
        i += 1;
    }
    inline(m);
    urls(m);
    emails(m);
    events.sort_by_key(|e| e.0);
    switches_of(m, events)
}

/// An open grid table: where the `+` of its last border are in a line, and
/// per column the indent of a paragraph ending in `::` and of the literal
/// block being read after it.
struct Grid {
    bounds: Vec<usize>,
    colons: Vec<Option<usize>>,
    literal: Vec<Option<usize>>,
}

impl Grid {
    /// A row's line `s..e`: each cell's text indented under a paragraph
    /// ending in `::` is a literal block.
    fn row(&mut self, m: &mut [u8], s: usize, e: usize) {
        for c in 0..self.bounds.len().saturating_sub(1) {
            let (a, b) = (s + self.bounds[c] + 1, s + self.bounds[c + 1]);
            // A cell spanning this boundary, or a short line: not read.
            if b >= e || m[b] != b'|' {
                continue;
            }
            let cell = &m[a..b];
            let t = trim(cell);
            if t.is_empty() {
                continue;
            }
            let ind = indent(cell);
            if let Some(x) = self.literal[c] {
                if ind > x {
                    blank(m, a, b);
                    continue;
                }
                self.literal[c] = None;
            }
            if let Some(x) = self.colons[c].take()
                && ind > x
            {
                self.literal[c] = Some(x);
                blank(m, a, b);
                continue;
            }
            if t.ends_with(b"::") {
                self.colons[c] = Some(ind);
            }
        }
    }
}

/// `name:: arguments`: the directive's name and what follows its `::`.
fn directive(rest: &[u8]) -> Option<(String, &[u8])> {
    let n = rest
        .iter()
        .take_while(|&&c| {
            c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b':' | b'+' | b'.')
        })
        .count();
    // The name may end in `:` (a domain's `py:function`); its `::` follows.
    let p = memchr::memmem::find(&rest[..(n + 2).min(rest.len())], b"::")?;
    if p == 0 || !rest[0].is_ascii_alphanumeric() {
        return None;
    }
    let after = &rest[p + 2..];
    if !after.is_empty() && !after[0].is_ascii_whitespace() {
        return None;
    }
    Some((String::from_utf8_lossy(&rest[..p]).into_owned(), after))
}

/// A field name `:name:` followed by whitespace or the line's end: its
/// length.
fn field_name_len(t: &[u8]) -> Option<usize> {
    let mut k = 1;
    while k < t.len() {
        match t[k] {
            b'\\' => k += 2,
            b':' => {
                return (k > 1
                    && t.get(k + 1).is_none_or(|c| c.is_ascii_whitespace())
                    && t[k - 1] != b' ')
                    .then_some(k + 1);
            }
            b'`' => return None,
            _ => k += 1,
        }
    }
    None
}

/// An option list's options (`-a`, `--all`, `-o FILE, --output=FILE`)
/// before the two spaces that start its description: their length.
fn option_len(t: &[u8]) -> Option<usize> {
    let starts = (t.len() > 1 && t[0] == b'-' && t[1].is_ascii_alphanumeric())
        || (t.len() > 2 && t.starts_with(b"--") && t[2].is_ascii_alphanumeric())
        || (t.len() > 1
            && t[0] == b'/'
            && t[1].is_ascii_alphabetic()
            && t.get(2).is_none_or(|c| *c == b' '));
    if !starts {
        return None;
    }
    match memchr::memmem::find(t, b"  ") {
        Some(p) => Some(p),
        None => {
            (!t.contains(&b' ') || t.iter().filter(|&&c| c == b' ').count() <= 2).then_some(t.len())
        }
    }
}

/// A bullet or enumerator with the space after it: its length.
fn list_marker(t: &[u8]) -> Option<usize> {
    if matches!(t[0], b'*' | b'-' | b'+') && t.get(1) == Some(&b' ') {
        return Some(2);
    }
    if t.starts_with("• ".as_bytes()) {
        return Some("• ".len());
    }
    let paren = t[0] == b'(';
    let k0 = usize::from(paren);
    let k = k0
        + t[k0..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'#')
            .count();
    if k == k0 || k - k0 > 4 {
        return None;
    }
    let label = &t[k0..k];
    let ok = label == b"#"
        || label.iter().all(u8::is_ascii_digit)
        || label.len() == 1
        || label.iter().all(|b| b"ivxlcIVXLC".contains(b));
    let close = match (paren, t.get(k)) {
        (true, Some(b')')) => k + 1,
        (false, Some(b'.' | b')')) => k + 1,
        _ => return None,
    };
    (ok && t.get(close) == Some(&b' ')).then_some(close + 1)
}

/// A line of one repeated punctuation character (a section's under- or
/// overline, a transition), at least three long.
fn adornment(t: &[u8]) -> bool {
    t.len() >= 3
        && t[0].is_ascii_punctuation()
        && t.iter().all(|&c| c == t[0])
        && !matches!(t[0], b'.' | b'|')
}

/// A grid table's border (`+---+===+`) or a simple table's (`===  ===`).
fn table_border(t: &[u8]) -> bool {
    if t.len() >= 3 && t[0] == b'+' && t[t.len() - 1] == b'+' {
        return t
            .iter()
            .all(|&c| matches!(c, b'+' | b'-' | b'=' | b':' | b' '));
    }
    t.len() >= 3
        && (t[0] == b'=' || t[0] == b'-')
        && t.iter().all(|&c| c == t[0] || c == b' ')
        && t.contains(&b' ')
}

fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// Whether an inline markup start-string may begin after `prev`.
fn may_start(prev: u8) -> bool {
    prev.is_ascii_whitespace() || b"'\"([{<-/:".contains(&prev) || prev >= 0x80
}

/// Whether an inline markup end-string may end before `next`.
fn may_end(next: u8) -> bool {
    next.is_ascii_whitespace() || b"'\")]}>-/:.,;!?\\_".contains(&next) || next >= 0x80
}

/// The end of the paragraph holding `k` (its first blank line).
fn paragraph_end(m: &[u8], k: usize) -> usize {
    let mut q = k;
    while let Some(p) = memchr::memchr(b'\n', &m[q..]) {
        let nl = q + p;
        let rest = &m[nl + 1..];
        let l = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        if rest[..l].iter().all(|c| c.is_ascii_whitespace()) {
            return nl;
        }
        q = nl + 1;
    }
    m.len()
}

/// The closing `close` of inline markup opened before `from`, before
/// `end`: an end-string not preceded by whitespace and followed by what may
/// end markup. The position after it.
fn closer(m: &[u8], from: usize, end: usize, close: &[u8]) -> Option<usize> {
    let mut k = from;
    while k < end {
        let p = memchr::memmem::find(&m[k..end], close)? + k;
        let after = p + close.len();
        let ok = p > from
            && !m[p - 1].is_ascii_whitespace()
            && (after >= m.len() || may_end(m[after]))
            && !(close == b"`" && after < m.len() && m[after] == b'`');
        // Backslashes escape nothing inside an inline literal (``C:\\``).
        if ok && (m[p - 1] != b'\\' || close == b"``") {
            return Some(after);
        }
        k = p + 1;
    }
    None
}

/// Inline markup over the whole (block-masked) text.
fn inline(m: &mut [u8]) {
    let n = m.len();
    let mut para_end = 0usize;
    // Where a search for each closer found none, up to the paragraph's
    // end: later openers of the same kind there are not searched again.
    let mut none_after = [usize::MAX; 2];
    let mut k = 0;
    while k < n {
        let b = m[k];
        if !matches!(b, b'`' | b'|' | b'[' | b'_' | b'*' | b':' | b'\\') {
            k += 1;
            continue;
        }
        if k >= para_end {
            para_end = paragraph_end(m, k);
            none_after = [usize::MAX; 2];
        }
        let prev = if k > 0 { m[k - 1] } else { b' ' };
        match b {
            b'\\' => {
                k += 2;
                continue;
            }
            b'`' if m[k..].starts_with(b"``") => {
                if !may_start(prev) || k >= none_after[0] {
                    k += 2;
                    continue;
                }
                match closer(m, k + 2, para_end, b"``") {
                    Some(q) => {
                        blank(m, k, q);
                        k = q;
                    }
                    None => {
                        none_after[0] = k;
                        k += 2;
                    }
                }
                continue;
            }
            b'`' if (may_start(prev) || prev == b':') && k < none_after[1] => {
                // Interpreted text or a hyperlink reference, with a role
                // before (`:role:`) or after it.
                let Some(q) = closer(m, k + 1, para_end, b"`") else {
                    none_after[1] = k;
                    k += 1;
                    continue;
                };
                let role_before = role_before(m, k);
                let mut end = q;
                let mut role: Option<Vec<u8>> = role_before.map(|r| m[r + 1..k - 1].to_vec());
                let mut reference = false;
                if role.is_none() {
                    if m[q..].starts_with(b"__") {
                        end = q + 2;
                        reference = true;
                    } else if m[q..].starts_with(b"_") {
                        end = q + 1;
                        reference = true;
                    } else if m.get(q) == Some(&b':')
                        && let Some(len) = role_after(m, q)
                    {
                        role = Some(m[q + 1..q + len - 1].to_vec());
                        end = q + len;
                    }
                }
                let start = role_before.unwrap_or(k);
                let inner = (k + 1, q - 1);
                let text_role = role.as_deref().is_none_or(|r| TEXT_ROLES.contains(&r));
                let target = target_in(m, inner.0, inner.1);
                if text_role || reference || target.is_some() {
                    blank(m, start, inner.0);
                    blank(m, inner.1, end);
                    if let Some(t) = target {
                        blank(m, t, inner.1);
                    }
                } else {
                    blank(m, start, end);
                }
                k = end;
                continue;
            }
            b'|' if may_start(prev) && k + 1 < n && !m[k + 1].is_ascii_whitespace() => {
                // Substitution references are short: the search is bounded.
                match closer(m, k + 1, para_end.min(k + 256), b"|") {
                    Some(q) => {
                        let mut end = q;
                        while end < n && m[end] == b'_' && end - q < 2 {
                            end += 1;
                        }
                        blank(m, k, end);
                        k = end;
                    }
                    None => k += 1,
                }
                continue;
            }
            b'[' if may_start(prev) => {
                // Footnote and citation references: `[1]_`, `[#x]_`, `[*]_`.
                if let Some(c) = m[k..para_end.min(k + 128)].iter().position(|&c| c == b']')
                    && m.get(k + c + 1) == Some(&b'_')
                    && c > 1
                    && !m[k + 1..k + c].iter().any(|b| b.is_ascii_whitespace())
                {
                    blank(m, k, k + c + 2);
                    k += c + 2;
                    continue;
                }
            }
            b'_' if m.get(k + 1) == Some(&b'`') && may_start(prev) => {
                // An inline target: `_`text``: the text is prose.
                blank(m, k, k + 1);
                k += 1;
                continue;
            }
            b'_' => {
                // `name_`, `name__`: a reference's mark.
                let next = m.get(k + 1).copied().unwrap_or(b' ');
                if !word(next) || !word(prev) {
                    blank(m, k, k + 1);
                }
            }
            b'*' => {
                let next = m.get(k + 1).copied().unwrap_or(b' ');
                if !word(next) || !word(prev) {
                    blank(m, k, k + 1);
                }
            }
            _ => {}
        }
        k += 1;
    }
}

/// Blank e-mail addresses (`name@host.domain`): an address, not prose.
pub(super) fn emails(m: &mut [u8]) {
    let local = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-');
    let host = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-');
    let mut from = 0;
    while let Some(p) = memchr::memchr(b'@', &m[from..]) {
        let at = from + p;
        let mut a = at;
        while a > 0 && local(m[a - 1]) {
            a -= 1;
        }
        let mut e = at + 1;
        while e < m.len() && host(m[e]) {
            e += 1;
        }
        // The host ends before a trailing `.` (the end of a sentence).
        while e > at + 1 && m[e - 1] == b'.' {
            e -= 1;
        }
        if a < at && m[at + 1..e].contains(&b'.') {
            blank(m, a, e);
        }
        from = e.max(at + 1);
    }
}

/// A role written before interpreted text starting at `tick`: where its
/// first `:` is.
fn role_before(m: &[u8], tick: usize) -> Option<usize> {
    if tick < 3 || m[tick - 1] != b':' {
        return None;
    }
    let mut k = tick - 1;
    while k > 0 {
        let c = m[k - 1];
        if c == b':' {
            let start = k - 1;
            if start + 1 == tick - 1 {
                return None;
            }
            let before = if start > 0 { m[start - 1] } else { b' ' };
            // A domain's role (`:py:func:`): its first colon.
            if before.is_ascii_alphanumeric() {
                k -= 1;
                continue;
            }
            return may_start(before).then_some(start);
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'+')) {
            return None;
        }
        k -= 1;
    }
    None
}

/// A role written after interpreted text (`` `x`:role: ``), starting at
/// `colon`: its length.
fn role_after(m: &[u8], colon: usize) -> Option<usize> {
    let n = m[colon + 1..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'+' | b':'))
        .count();
    let name = &m[colon + 1..colon + 1 + n];
    let end = name.iter().rposition(|&c| c == b':')?;
    (end > 0).then_some(end + 2)
}

/// An embedded target at the end of interpreted text (`title <target>`):
/// where its blank before `<` starts.
fn target_in(m: &[u8], start: usize, end: usize) -> Option<usize> {
    if end <= start + 2 || m[end - 1] != b'>' {
        return None;
    }
    let lt = m[start..end].iter().rposition(|&c| c == b'<')? + start;
    if lt == start || !m[lt - 1].is_ascii_whitespace() {
        return None;
    }
    let mut t = lt;
    while t > start && m[t - 1].is_ascii_whitespace() {
        t -= 1;
    }
    (t > start).then_some(t)
}

#[cfg(test)]
mod tests {
    fn masked(text: &str) -> String {
        let mut m = text.as_bytes().to_vec();
        super::mask(&mut m);
        String::from_utf8(m).unwrap()
    }

    fn kept_words(text: &str) -> Vec<String> {
        masked(text)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn titles_paragraphs_lists_and_tables_are_prose() {
        let text = "=====\nTitle\n=====\n\nSection\n-------\n\nA paragraph with *em* and **strong**.\n\n* item one\n#. item two\n\n+-----+-----+\n| a b | c d |\n+=====+=====+\n\n=====  =====\nleft   right\n=====  =====\n\nterm\n   its definition\n\n:Author: Someone\n\n-a, --all   show all\n";
        assert_eq!(
            kept_words(text),
            [
                "Title",
                "Section",
                "A",
                "paragraph",
                "with",
                "em",
                "and",
                "strong",
                "item",
                "one",
                "item",
                "two",
                "a",
                "b",
                "c",
                "d",
                "left",
                "right",
                "term",
                "its",
                "definition",
                "Someone",
                "show",
                "all"
            ]
        );
    }

    #[test]
    fn literal_blocks_directives_and_comments_are_masked() {
        let text = "Intro::\n\n    literal code\n    more code\n\nAfter.\n\n::\n\n  bare literal\n\n>>> doctest code\n1\n\n.. code-block:: python\n   :linenos:\n\n   code body\n\n.. note:: Note text\n\n   Note body.\n\n.. versionadded:: 3.2 Added words.\n\n.. image:: picture.png\n   :alt: alt words\n\n.. unknown-directive:: argument words\n   :opt: option words\n\n   Content words.\n\n.. a comment\n   continued comment\n\n.. _target-name: https://example.com\n\n.. |sub| replace:: substitution words\n\n.. [1] Footnote words.\n\nEnd.\n";
        assert_eq!(
            kept_words(text),
            [
                "Intro", "After", "Note", "text", "Note", "body", "Added", "words", "Content",
                "words", "Footnote", "words", "End"
            ]
        );
    }

    #[test]
    fn inline_literals_roles_references_and_substitutions() {
        let text = "Use ``code`` and :func:`func_name` and :ref:`label-name` and :ref:`the title <label>` and `link text <https://x.example>`_ and `named`_ and word_ and |sub| and [1]_ and :emphasis:`stressed` and `cited` and `x`:code: end.\n";
        assert_eq!(
            kept_words(text),
            [
                "Use", "and", "and", "and", "the", "title", "and", "link", "text", "and", "named",
                "and", "word", "and", "and", "and", "stressed", "and", "cited", "and", "end"
            ]
        );
    }

    #[test]
    fn offsets_and_newlines_are_kept() {
        let text = "Word ``x`` é::\n\n   code\n";
        let m = masked(text);
        assert_eq!(m.len(), text.len());
        // `é::` reads as `é:` followed by a literal block.
        assert_eq!(m, "Word       é: \n\n       \n");
    }

    #[test]
    fn email_addresses_are_masked() {
        let text = "Author: Guido van Rossum <guido@python.org>, mail me at a.b@x.org.\n";
        assert_eq!(
            kept_words(text),
            ["Author", "Guido", "van", "Rossum", "mail", "me", "at"]
        );
    }

    #[test]
    fn switch_comments() {
        let text = "one\n\n.. kapi off\n\ntwo\n\n.. kapi on\n\nthree\n";
        assert_eq!(kept_words(text), ["one", "three"]);
        let mut m = "a\n\n.. kapi off: Quickcast\n\nb\n".as_bytes().to_vec();
        let sw = super::mask(&mut m);
        assert_eq!(sw.len(), 1);
        assert_eq!(sw[0].selectors, ["Quickcast"]);
    }

    #[test]
    fn an_option_list_starts_a_block() {
        // `--x` on a paragraph's second line is its text (here inside an
        // inline literal), not an option list.
        let text = "* Build without docstrings (``./configure\n  --without-doc-strings``).\n\n-a  all\n--bee  bees\n";
        assert_eq!(
            kept_words(text),
            ["Build", "without", "docstrings", "all", "bees"]
        );
    }

    #[test]
    fn backslashes_escape_nothing_in_inline_literals() {
        let text = "The drive ``C:\\`` holds words, not ``D:\\``.\n";
        assert_eq!(kept_words(text), ["The", "drive", "holds", "words", "not"]);
    }

    #[test]
    fn list_items_may_follow_one_another() {
        let text = "4. While shortest:\n\n   a. Get the node.\n   b. Visit the node.\n   c. Update\n      neighbors.\n";
        assert_eq!(
            kept_words(text),
            [
                "While",
                "shortest",
                "Get",
                "the",
                "node",
                "Visit",
                "the",
                "node",
                "Update",
                "neighbors"
            ]
        );
    }

    #[test]
    fn literal_blocks_in_grid_table_cells_are_masked() {
        let text = "+-------+------------------------+\n| state | The default calls ::   |\n|       |                        |\n|       |    obj.update(state)   |\n|       |                        |\n|       | or else ::             |\n|       |                        |\n|       |    for k, v in state:  |\n|       |        setattr(k, v)   |\n+-------+------------------------+\n| more  | Words here.            |\n+-------+------------------------+\n";
        assert_eq!(
            kept_words(text),
            [
                "state", "The", "default", "calls", "or", "else", "more", "Words", "here"
            ]
        );
    }

    #[test]
    fn unclosed_openers_stay_linear() {
        let text = "``a `b |c :r:`d *e\n".repeat(20_000);
        let start = std::time::Instant::now();
        let mut m = text.as_bytes().to_vec();
        super::mask(&mut m);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
