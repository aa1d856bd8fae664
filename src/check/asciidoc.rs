//! What in an AsciiDoc file is prose, written from the AsciiDoc Language
//! documentation (docs.asciidoctor.org/asciidoc/latest): no Rust parser of
//! AsciiDoc is ready (`asciidoc-parser` says of itself that it is "in its
//! infancy and in no way ready to use"), so this is a masker: it blanks,
//! byte for byte, what is not prose, and `ci/bench-formats` compares what
//! it keeps with what Asciidoctor renders as text over real documentation.
//!
//! Prose: paragraphs, list items (and description list terms), section and
//! block titles, table cells, admonitions, sidebars, quotes, verses,
//! examples and open blocks, link and cross-reference text, footnotes.
//! Not prose: listing, literal, passthrough, stem and fenced blocks (`----`,
//! `....`, `++++`, ```` ``` ````), paragraphs styled as code (`[source]`,
//! `[listing]`, `[literal]`, `[pass]`, `[stem]`, diagrams), indented
//! (literal) paragraphs, comments (`//`, `////`), attribute entries
//! (`:name: value`) and references (`{name}`), block attribute lines and
//! anchors (`[source,java]`, `[[id]]`, `[#id.role]`), preprocessor
//! conditionals (`ifdef::x[]`, `endif::[]`; a one-line `ifdef::x[text]`
//! keeps its text), block macros (`include::`, `image::`, `toc::`),
//! inline monospace (`` `x` ``, ``` ``x`` ```), passthroughs (`+x+`,
//! `++x++`, `+++x+++`, `$$x$$`, `pass:[x]`), `stem:`, `kbd:`, `image:` and
//! `icon:` macros, macro targets (`link:`, `xref:`, `mailto:`, URLs before
//! their `[text]`), `<<id>>` (the `text` of `<<id,text>>` is prose),
//! anchors, index terms, the document header's author and revision lines,
//! list markers, table cell separators and specifiers, admonition labels,
//! and cells styled literal or monospace (`l|`, `m|`).
//!
//! Switches: `// kapi off` ... `// kapi on` (and `// vale off`, and Vale's
//! `pass:[<!-- vale off -->]`), and `// kapi off: Quickcast` for single
//! rules, as in Markdown.

use super::markdown::{Event, blank, lines, switch_event, switches_of, urls};
use super::prose::Switch;

/// Styles of a block attribute line whose block is not prose.
const VERBATIM_STYLES: &[&str] = &[
    "source",
    "listing",
    "literal",
    "pass",
    "stem",
    "latexmath",
    "asciimath",
    "plantuml",
    "graphviz",
    "ditaa",
    "mermaid",
    "svgbob",
    "d2",
    "shell",
    "console",
];

/// Mask what in the AsciiDoc text `m` is not prose; the passages where
/// rules are switched off.
pub fn mask(m: &mut [u8]) -> Vec<Switch> {
    let ls = lines(m);
    let mut events: Vec<(usize, usize, Event)> = Vec::new();
    // Prose lines, as runs of consecutive lines (one paragraph each), for
    // the inline pass.
    let mut prose: Vec<(usize, usize)> = Vec::new();
    // Delimiters of the open compound blocks (examples, sidebars, quotes,
    // open blocks, tables), innermost last.
    let mut open: Vec<Vec<u8>> = Vec::new();
    let mut at_block_start = true;
    let mut verbatim_next = false;
    let mut seen_block = false;
    let mut header = false;
    // The open tables, innermost last, and the columns and options the
    // last block attribute line gave the next one.
    let mut tables: Vec<Table> = Vec::new();
    let mut next_table: Option<(Vec<u8>, bool)> = None;
    let mut cell_block_next = false;
    let mut i = 0;
    while i < ls.len() {
        let (s, e, _) = ls[i];
        let line = &m[s..e];
        let t = trim(line);
        // Where the trimmed line starts in the file.
        let off = s + line.iter().take_while(|c| c.is_ascii_whitespace()).count();
        if t.is_empty() {
            at_block_start = true;
            header = false;
            i += 1;
            continue;
        }
        if std::mem::take(&mut cell_block_next) {
            // The first line of an AsciiDoc cell (`a|` ending the line
            // before) starts a block of its own: indented, it is literal.
            at_block_start = true;
        }
        // Comments, anywhere.
        if is_run(t, b'/', 4) {
            let close = t.to_vec();
            let end = closing(m, &ls, i + 1, &close);
            mask_lines(m, &ls, i, end);
            i = end + 1;
            continue;
        }
        if t.starts_with(b"//") {
            if let Some(ev) = std::str::from_utf8(&t[2..]).ok().and_then(switch_event) {
                events.push((s, e, ev));
            }
            blank(m, s, e);
            i += 1;
            continue;
        }
        // Preprocessor directives, anywhere.
        if let Some(kept) = conditional(t) {
            let len = t.len();
            match kept {
                // The text of a one-line `ifdef::attr[text]` is prose.
                Some((a, b)) => {
                    blank(m, off, off + a);
                    blank(m, off + b, off + len);
                    prose.push((i, i));
                }
                None => blank(m, off, off + len),
            }
            i += 1;
            continue;
        }
        if t.starts_with(b"include::") {
            blank(m, s, e);
            i += 1;
            continue;
        }
        // Verbatim delimited blocks.
        let fence = t.starts_with(b"```");
        let verbatim_delim = is_run(t, b'-', 4) || is_run(t, b'.', 4) || is_run(t, b'+', 4);
        let compound = is_run(t, b'=', 4)
            || is_run(t, b'*', 4)
            || is_run(t, b'_', 4)
            || t == b"--"
            || is_table_delim(t);
        if fence || verbatim_delim || (compound && verbatim_next && !open.contains(&t.to_vec())) {
            let close: Vec<u8> = if fence { b"```".to_vec() } else { t.to_vec() };
            let end = if fence {
                (i + 1..ls.len())
                    .find(|&k| trim(&m[ls[k].0..ls[k].1]).starts_with(b"```"))
                    .unwrap_or(ls.len() - 1)
            } else {
                closing(m, &ls, i + 1, &close)
            };
            mask_lines(m, &ls, i, end);
            verbatim_next = false;
            at_block_start = true;
            seen_block = true;
            i = end + 1;
            continue;
        }
        if compound {
            if open.last().is_some_and(|d| d.as_slice() == t) {
                open.pop();
                if is_table_delim(t) {
                    tables.pop();
                }
            } else {
                open.push(t.to_vec());
                if is_table_delim(t) {
                    let (cols, header) = next_table.take().unwrap_or_default();
                    // An implicit header row: the first line, then a blank one.
                    let implicit = i + 2 < ls.len()
                        && !trim(&m[ls[i + 1].0..ls[i + 1].1]).is_empty()
                        && trim(&m[ls[i + 2].0..ls[i + 2].1]).is_empty();
                    tables.push(Table {
                        sep: if t[0] == b'!' { b'!' } else { b'|' },
                        cols: column_codes(&cols),
                        cell: 0,
                        code: false,
                        header_line: (header || implicit).then_some(i + 1),
                    });
                }
            }
            blank(m, s, e);
            verbatim_next = false;
            at_block_start = true;
            seen_block = true;
            i += 1;
            continue;
        }
        if t == b"+" {
            // A list continuation.
            blank(m, s, e);
            at_block_start = true;
            i += 1;
            continue;
        }
        if attribute_entry(t) {
            let mut end = i;
            while end + 1 < ls.len() && trim_end(&m[ls[end].0..ls[end].1]).ends_with(b" \\") {
                end += 1;
            }
            mask_lines(m, &ls, i, end);
            i = end + 1;
            continue;
        }
        if at_block_start {
            if header {
                // The author and revision lines under the document title.
                blank(m, s, e);
                i += 1;
                continue;
            }
            if t.len() >= 2 && t[0] == b'[' && t[t.len() - 1] == b']' && !t.contains(&b' ')
                || (t.len() >= 2 && t[0] == b'[' && t.ends_with(b"]") && attr_line(t))
            {
                if let Some(style) = block_style(t) {
                    verbatim_next = VERBATIM_STYLES.contains(&style.as_str());
                }
                next_table = Some(table_attributes(t));
                blank(m, s, e);
                i += 1;
                continue;
            }
            if block_macro(t) {
                blank(m, s, e);
                seen_block = true;
                i += 1;
                continue;
            }
            if matches!(t, b"'''" | b"---" | b"***" | b"<<<" | b"- - -" | b"* * *") {
                blank(m, s, e);
                i += 1;
                continue;
            }
            if t[0] == b'.' && t.len() > 1 && !matches!(t[1], b'.' | b' ' | b'\t') {
                // A block title.
                blank(m, off, off + 1);
                prose.push((i, i));
                i += 1;
                continue;
            }
            if let Some(level) = section_title(t) {
                blank(m, off, off + level + 1);
                prose.push((i, i));
                header = level == 1 && !seen_block;
                seen_block = true;
                verbatim_next = false;
                i += 1;
                continue;
            }
            // A paragraph (or a list item, or a table's rows) starts here.
            let end = paragraph_end(m, &ls, i);
            next_table = None;
            seen_block = true;
            let literal = matches!(line[0], b' ' | b'\t') && list_marker(t).is_none();
            if verbatim_next || literal {
                mask_lines(m, &ls, i, end);
                verbatim_next = false;
                i = end + 1;
                continue;
            }
            at_block_start = false;
        }
        // A prose line: its markers and its inline markup.
        if let Some(n) = admonition_label(t) {
            blank(m, off, off + n);
        } else if let Some(n) = list_marker(t) {
            blank(m, off, off + n);
        } else if let Some((a, b)) = description_marker(t) {
            blank(m, off + a, off + b);
        }
        if let Some(table) = tables.last_mut() {
            cell_block_next = table_row(m, table, off, e, table.header_line == Some(i));
        }
        match prose.last_mut() {
            Some(last) if last.1 + 1 == i => last.1 = i,
            _ => prose.push((i, i)),
        }
        i += 1;
    }
    for (a, b) in prose {
        inline(m, ls[a].0, ls[b].1, &mut events);
    }
    urls(m);
    super::rst::emails(m);
    events.sort_by_key(|e| e.0);
    switches_of(m, events)
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    trim_end(&b[start..])
}

fn trim_end(b: &[u8]) -> &[u8] {
    let end = b.len()
        - b.iter()
            .rev()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
    &b[..end]
}

/// A line of at least `min` `b` bytes and nothing else.
fn is_run(t: &[u8], b: u8, min: usize) -> bool {
    t.len() >= min && t.iter().all(|&c| c == b)
}

fn is_table_delim(t: &[u8]) -> bool {
    t.len() >= 4 && matches!(t[0], b'|' | b'!' | b',' | b':') && t[1..].iter().all(|&c| c == b'=')
}

/// The index of the line closing a delimited block opened by `delim`
/// before line `from` (the last line when it is never closed).
fn closing(m: &[u8], ls: &[(usize, usize, usize)], from: usize, delim: &[u8]) -> usize {
    (from..ls.len())
        .find(|&k| trim(&m[ls[k].0..ls[k].1]) == delim)
        .unwrap_or(ls.len().saturating_sub(1))
}

fn mask_lines(m: &mut [u8], ls: &[(usize, usize, usize)], from: usize, to: usize) {
    if from < ls.len() {
        let to = to.min(ls.len() - 1);
        blank(m, ls[from].0, ls[to].1);
    }
}

/// The last line of the paragraph starting at line `from`: up to a blank
/// line, a block delimiter or a list continuation.
fn paragraph_end(m: &[u8], ls: &[(usize, usize, usize)], from: usize) -> usize {
    let mut k = from;
    while k + 1 < ls.len() {
        let t = trim(&m[ls[k + 1].0..ls[k + 1].1]);
        if t.is_empty()
            || t == b"+"
            || is_run(t, b'-', 4)
            || is_run(t, b'.', 4)
            || is_run(t, b'+', 4)
            || is_run(t, b'/', 4)
            || is_run(t, b'=', 4)
            || is_run(t, b'*', 4)
            || is_run(t, b'_', 4)
            || t == b"--"
            || is_table_delim(t)
            || t.starts_with(b"```")
        {
            break;
        }
        k += 1;
    }
    k
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `:name: value`, `:name!:`, `:!name:`.
fn attribute_entry(t: &[u8]) -> bool {
    if t.first() != Some(&b':') {
        return false;
    }
    let mut k = 1;
    if t.get(k) == Some(&b'!') {
        k += 1;
    }
    let start = k;
    while k < t.len() && is_name_byte(t[k]) {
        k += 1;
    }
    if k == start || !t[start].is_ascii_alphanumeric() && t[start] != b'_' {
        return false;
    }
    if t.get(k) == Some(&b'!') {
        k += 1;
    }
    t.get(k) == Some(&b':') && t.get(k + 1).is_none_or(|c| c.is_ascii_whitespace())
}

/// A preprocessor conditional (`ifdef::a[]`, `ifndef::a,b[]`,
/// `ifeval::[...]`, `endif::a[]`): `Some(Some(range))` when it is a
/// one-line `ifdef::a[text]` whose `text` is prose.
fn conditional(t: &[u8]) -> Option<Option<(usize, usize)>> {
    let name_len = [&b"ifdef::"[..], b"ifndef::", b"ifeval::", b"endif::"]
        .iter()
        .find(|p| t.starts_with(p))?
        .len();
    let open = name_len + t[name_len..].iter().position(|&c| c == b'[')?;
    if !t.ends_with(b"]") || t[name_len..open].contains(&b' ') {
        return None;
    }
    let inner = (open + 1, t.len() - 1);
    Some(
        (inner.0 < inner.1 && !t.starts_with(b"ifeval") && !t.starts_with(b"endif"))
            .then_some(inner),
    )
}

/// `name::target[attributes]` on its own line (image, video, audio, toc,
/// and extensions' block macros).
fn block_macro(t: &[u8]) -> bool {
    let Some(p) = memchr::memmem::find(t, b"::") else {
        return false;
    };
    p > 0
        && t[..p]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        && t[0].is_ascii_alphabetic()
        && t.ends_with(b"]")
        && t[p + 2..]
            .iter()
            .position(|&c| c == b'[')
            .is_some_and(|o| !t[p + 2..p + 2 + o].contains(&b' '))
}

/// Whether a bracketed line reads as block attributes (`[quote, Author,
/// Book]`, `[cols="1,2"]`) rather than prose that starts with a bracket.
fn attr_line(t: &[u8]) -> bool {
    let inner = &t[1..t.len() - 1];
    // `[[id]]`, `[#id]`, `[.role]`, `[%option]`, `[style...`.
    inner.starts_with(b"[")
        || matches!(inner.first(), Some(b'#' | b'.' | b'%' | b',' | b'"'))
        || inner
            .iter()
            .take_while(|&&c| c != b',')
            .all(|&c| is_name_byte(c))
        || memchr::memchr(b'=', inner).is_some()
}

/// The style named first in a block attribute line (`[source,java]`:
/// `source`; `[,java]` with a language is source).
fn block_style(t: &[u8]) -> Option<String> {
    let inner = &t[1..t.len() - 1];
    if inner.starts_with(b"[") {
        return None;
    }
    let end = inner
        .iter()
        .position(|&c| matches!(c, b',' | b'#' | b'.' | b'%'))
        .unwrap_or(inner.len());
    let style = String::from_utf8_lossy(&inner[..end])
        .trim()
        .to_ascii_lowercase();
    if style.is_empty() && inner.starts_with(b",") {
        return Some("source".into());
    }
    Some(style)
}

/// `= Title` ... `====== Title` (or `#`): the marker's length.
fn section_title(t: &[u8]) -> Option<usize> {
    let c = t[0];
    if c != b'=' && c != b'#' {
        return None;
    }
    let n = t.iter().take_while(|&&b| b == c).count();
    (n <= 6 && t.get(n) == Some(&b' ') && t.len() > n + 1).then_some(n)
}

/// `NOTE: ` and the other admonition labels: the label's length.
fn admonition_label(t: &[u8]) -> Option<usize> {
    ["NOTE: ", "TIP: ", "IMPORTANT: ", "WARNING: ", "CAUTION: "]
        .iter()
        .find(|l| t.starts_with(l.as_bytes()))
        .map(|l| l.len())
}

/// A list item's marker (`* `, `- `, `. `, `1. `, `a. `, `iv) `, `<1> `,
/// with a checklist's `[x] `): its length.
fn list_marker(t: &[u8]) -> Option<usize> {
    let n = if matches!(t[0], b'*' | b'.') {
        let c = t[0];
        t.iter().take_while(|&&b| b == c).count()
    } else if t[0] == b'-' {
        1
    } else if t[0] == b'<' {
        let close = t.iter().position(|&b| b == b'>')?;
        if !(close > 1 && t[1..close].iter().all(|&b| b.is_ascii_digit() || b == b'.')) {
            return None;
        }
        close + 1
    } else {
        let k = t.iter().take_while(|b| b.is_ascii_alphanumeric()).count();
        if k == 0
            || k > 4
            || !matches!(t.get(k), Some(b'.' | b')'))
            || !(t[..k].iter().all(u8::is_ascii_digit)
                || k == 1
                || t[..k].iter().all(|b| b"ivxlcIVXLC".contains(b)))
        {
            return None;
        }
        k + 1
    };
    if t.get(n) != Some(&b' ') {
        return None;
    }
    let mut n = n + 1;
    for check in [&b"[x] "[..], b"[ ] ", b"[*] "] {
        if t[n..].starts_with(check) {
            n += check.len();
        }
    }
    Some(n)
}

/// A description list's `::`, `:::`, `::::` or `;;` after its term.
fn description_marker(t: &[u8]) -> Option<(usize, usize)> {
    let mut k = 1;
    while k + 1 < t.len() {
        // Only a `:` or `;` can start the marker.
        match memchr::memchr2(b':', b';', &t[k..]) {
            Some(p) => k += p,
            None => return None,
        }
        if k + 1 >= t.len() {
            return None;
        }
        if (t[k] == b':' || t[k] == b';') && t[k + 1] == t[k] && t[k - 1] != b':' {
            let c = t[k];
            let end = k + t[k..].iter().take_while(|&&b| b == c).count();
            let run = end - k;
            let ok = if c == b';' {
                run == 2
            } else {
                (2..=4).contains(&run)
            };
            if ok && t.get(end).is_none_or(|b| *b == b' ' || *b == b'\t') {
                // `link::` or `image::` would be a macro, not a term.
                return Some((k, end));
            }
            k = end;
            continue;
        }
        k += 1;
    }
    None
}

/// An open table: its cell separator, which columns are styled literal or
/// monospace (`[cols="1,2m"]`), the cells seen so far, whether the last
/// cell (running on from the line before) is code, and the line of its
/// header row.
struct Table {
    sep: u8,
    cols: Vec<bool>,
    cell: usize,
    code: bool,
    header_line: Option<usize>,
}

/// The `cols` value and whether the header option is set, in a block
/// attribute line.
fn table_attributes(t: &[u8]) -> (Vec<u8>, bool) {
    let header = memchr::memmem::find(t, b"%header").is_some()
        || memchr::memmem::find(t, b"options=\"header").is_some()
        || memchr::memmem::find(t, b"options=header").is_some();
    let Some(p) = memchr::memmem::find(t, b"cols=") else {
        return (Vec::new(), header);
    };
    let v = &t[p + 5..];
    let cols = match v.first() {
        Some(&q @ (b'"' | b'\'')) => v[1..].split(|&c| c == q).next().unwrap_or(&[]),
        _ => v.split(|&c| c == b',' || c == b']').next().unwrap_or(&[]),
    };
    (cols.to_vec(), header)
}

/// Which columns a `cols` value styles literal or monospace: `1,2m,1`,
/// `3*`, `2*m,1`, `<.^1l`; `3` alone is three plain columns.
fn column_codes(cols: &[u8]) -> Vec<bool> {
    let cols = trim(cols);
    if !cols.is_empty() && cols.iter().all(u8::is_ascii_digit) {
        let n = std::str::from_utf8(cols)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        return vec![false; n.min(1000)];
    }
    let mut out = Vec::new();
    for spec in cols.split(|&c| c == b',' || c == b';') {
        let spec = trim(spec);
        let (n, spec) = match memchr::memchr(b'*', spec) {
            Some(p) => (
                std::str::from_utf8(&spec[..p])
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1),
                &spec[p + 1..],
            ),
            None => (1, spec),
        };
        let code = spec.last().is_some_and(|c| matches!(c, b'l' | b'm'));
        out.extend(std::iter::repeat_n(code, usize::min(n, 1000)));
    }
    out
}

/// A table row's line from `start` to `end`: cell separators and their
/// specifiers are masked, and cells styled literal or monospace (by their
/// specifier or their column; a header row's cells are not styled by
/// column). Whether the line ends with an AsciiDoc cell's separator
/// (`a|`), whose text starts on the next line as a block of its own.
fn table_row(m: &mut [u8], table: &mut Table, start: usize, end: usize, header: bool) -> bool {
    let sep = table.sep;
    // A separator, unless escaped (`\\|`).
    let is_sep = |m: &[u8], q: usize| m[q] == sep && (q == start || m[q - 1] != b'\\');
    // The specifier before the separator at `k`: `2+`, `.3+`, `^.^`, `a`,
    // `l`... where it starts.
    let spec_start = |m: &[u8], k: usize| {
        let mut a = k;
        while a > start && b"0123456789*+.<>^adehlmsv".contains(&m[a - 1]) {
            a -= 1;
        }
        if a > start && !m[a - 1].is_ascii_whitespace() {
            a = k;
        }
        a
    };
    let mut k = start;
    if table.code {
        // A code cell running on from the line before, up to the next
        // cell's specifier.
        let next = (k..end).find(|&q| is_sep(m, q)).unwrap_or(end);
        let a = if next < end { spec_start(m, next) } else { end };
        blank(m, k, a);
        k = a;
    }
    let mut block_next = false;
    while k < end {
        if !is_sep(m, k) {
            k += 1;
            continue;
        }
        let a = spec_start(m, k);
        let spec = &m[a..k];
        let style = spec.iter().rev().find(|c| c.is_ascii_alphabetic()).copied();
        // A column span (`2+`, not a row span `.2+`) or a duplication (`3*`).
        let digits = spec.iter().take_while(|c| c.is_ascii_digit()).count();
        let span = match spec.get(digits) {
            Some(b'+' | b'*') if digits > 0 => std::str::from_utf8(&spec[..digits])
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(1usize)
                .min(1000),
            _ => 1,
        };
        let column = if table.cols.is_empty() {
            false
        } else {
            table.cols[table.cell % table.cols.len()]
        };
        table.cell += span;
        let code = match style {
            Some(c) => c == b'l' || c == b'm',
            None => column && !header,
        };
        table.code = code;
        blank(m, a, k + 1);
        k += 1;
        block_next = style == Some(b'a') && m[k..end].iter().all(u8::is_ascii_whitespace);
        if code {
            let next = (k..end).find(|&q| is_sep(m, q)).unwrap_or(end);
            let a = if next < end { spec_start(m, next) } else { end };
            blank(m, k, a);
            k = a.max(k);
        }
    }
    block_next
}

fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The end of the first `close` after `from` and before `end` (on the
/// same paragraph), `None` when there is none.
fn find_close(m: &[u8], from: usize, end: usize, close: &[u8]) -> Option<usize> {
    if from >= end {
        return None;
    }
    memchr::memmem::find(&m[from..end], close).map(|p| from + p + close.len())
}

/// The `]` closing a macro's attribute list opened at `open`, skipping
/// escaped ones.
fn bracket_close(m: &[u8], open: usize, end: usize) -> Option<usize> {
    let mut k = open + 1;
    while k < end {
        match m[k] {
            b'\\' => k += 2,
            b']' => return Some(k),
            b'\n' if k + 1 < end && m[k + 1] == b'\n' => return None,
            _ => k += 1,
        }
    }
    None
}

/// Inline macros whose whole text is not prose.
const CODE_MACROS: &[&[u8]] = &[
    b"pass",
    b"stem",
    b"latexmath",
    b"asciimath",
    b"kbd",
    b"image",
    b"icon",
    b"indexterm",
    b"anchor",
];

/// Inline macros whose target is not prose and whose text is.
const TEXT_MACROS: &[&[u8]] = &[
    b"link",
    b"xref",
    b"mailto",
    b"footnote",
    b"footnoteref",
    b"btn",
    b"menu",
    b"indexterm2",
    b"https",
    b"http",
    b"ftp",
    b"irc",
    b"file",
];

/// The bytes inline markup can start at, and letters and digits (a word
/// is skipped whole; one may start a macro): every other byte is skipped
/// at once.
const STARTS: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'\\'
                    | b'`'
                    | b'+'
                    | b'$'
                    | b'{'
                    | b'<'
                    | b'['
                    | b'('
                    | b'*'
                    | b'_'
                    | b'#'
                    | b'^'
                    | b'~'
                    | b'&'
            );
        i += 1;
    }
    t
};

/// Inline markup of the paragraph `start..end`.
fn inline(m: &mut [u8], start: usize, end: usize, events: &mut Vec<(usize, usize, Event)>) {
    // Where a search for each closer found none: later openers of the same
    // kind are not searched again (that would be quadratic).
    let mut none_after = [usize::MAX; 11];
    // Typographic quotes (`"`, `'`) opened and not yet closed.
    let mut quotes = 0usize;
    let mut k = start;
    while k < end {
        let b = m[k];
        if !STARTS[b as usize] {
            k += 1;
            continue;
        }
        let prev = if k > start { m[k - 1] } else { b' ' };
        match b {
            b'\\' => {
                k += 2;
                continue;
            }
            b'`' => {
                // `"`quoted`"`: typographic quotes, not monospace, when
                // the closing `` `" `` follows in the paragraph.
                let qslot = if prev == b'"' { 6 } else { 7 };
                if (prev == b'"' || prev == b'\'')
                    && k < none_after[qslot]
                    && (find_close(m, k + 1, end, &[b'`', prev]).is_some() || {
                        none_after[qslot] = k;
                        false
                    })
                {
                    blank(m, k - 1, k + 1);
                    quotes += 1;
                    k += 1;
                    continue;
                }
                if quotes > 0 && k + 1 < end && (m[k + 1] == b'"' || m[k + 1] == b'\'') {
                    blank(m, k, k + 2);
                    quotes -= 1;
                    k += 2;
                    continue;
                }
                let two = k + 1 < end && m[k + 1] == b'`';
                let close: &[u8] = if two { b"``" } else { b"`" };
                let slot = usize::from(two);
                if k >= none_after[slot] || (!two && word(prev)) {
                    k += 1;
                    continue;
                }
                // A passthrough right inside (`` `+x`y+` ``) is taken out
                // first, as Asciidoctor does: its text cannot close the
                // monospace.
                let mut from = k + close.len() + usize::from(!two);
                let inner = k + close.len();
                let plus = m[inner..end]
                    .iter()
                    .take_while(|&&c| c == b'+')
                    .count()
                    .min(3);
                let pslot = 7 + plus;
                if plus > 0 && inner < none_after[pslot] {
                    match find_close(m, inner + plus + 1, end, &[b'+'; 3][..plus]) {
                        Some(p) => from = p,
                        None => none_after[pslot] = inner,
                    }
                }
                match find_close(m, from, end, close) {
                    Some(mut q) => {
                        // A run of backticks closes as a whole
                        // (`` ```x``` ``: code in code).
                        while q < end && m[q] == b'`' {
                            q += 1;
                        }
                        blank(m, k, q);
                        k = q;
                    }
                    None => {
                        none_after[slot] = k;
                        k += 1;
                    }
                }
                continue;
            }
            b'+' | b'$' => {
                let n = m[k..end].iter().take_while(|&&c| c == b).count();
                let (run, slot) = match (b, n) {
                    (b'+', 3..) => (3, 2),
                    (b'+', 2) => (2, 3),
                    (b'+', 1) => (1, 4),
                    (b'$', 2..) => (2, 5),
                    _ => {
                        k += n;
                        continue;
                    }
                };
                let constrained = run == 1;
                if k >= none_after[slot]
                    || (constrained
                        && (word(prev) || k + 1 >= end || m[k + 1].is_ascii_whitespace()))
                {
                    k += n;
                    continue;
                }
                let close = &[b; 3][..run];
                let mut from = k + run;
                loop {
                    match find_close(m, from + usize::from(constrained), end, close) {
                        Some(q)
                            if constrained
                                && (q < end && word(m[q]) || m[q - 2].is_ascii_whitespace()) =>
                        {
                            from = q - 1;
                        }
                        Some(q) => {
                            blank(m, k, q);
                            k = q;
                            break;
                        }
                        None => {
                            none_after[slot] = k;
                            k += n;
                            break;
                        }
                    }
                }
                continue;
            }
            b'{' => {
                let n = m[k + 1..end]
                    .iter()
                    .take_while(|&&c| is_name_byte(c) || c == b':')
                    .count();
                if n > 0 && k + 1 + n < end && m[k + 1 + n] == b'}' {
                    let mut q = k + n + 2;
                    // `{url-home}/path[text]`: the attribute holds a URL, and
                    // what follows up to `[` is the rest of its target.
                    let run = m[q..end.min(q + 512)]
                        .iter()
                        .take_while(|c| !c.is_ascii_whitespace() && **c != b'[')
                        .count();
                    if q + run < end
                        && m[q + run] == b'['
                        && let Some(close) = bracket_close(m, q + run, end)
                    {
                        blank(m, k, q + run + 1);
                        blank(m, close, close + 1);
                        q += run + 1;
                    } else {
                        blank(m, k, q);
                    }
                    k = q;
                    continue;
                }
            }
            b'<' if k + 1 < end && m[k + 1] == b'<' => {
                if let Some(q) = find_close(m, k + 2, end.min(k + 512), b">>") {
                    let inner = &m[k + 2..q - 2];
                    if !inner.is_empty() && !inner.contains(&b'\n') && !inner.starts_with(b" ") {
                        match memchr::memchr(b',', inner) {
                            Some(c) => {
                                // The text is read on for its own markup
                                // (`<<id,`Type`>>` is code).
                                blank(m, k, k + 2 + c + 1);
                                blank(m, q - 2, q);
                                k += 2 + c + 1;
                            }
                            None => {
                                blank(m, k, q);
                                k = q;
                            }
                        }
                        continue;
                    }
                }
            }
            b'[' => {
                // Inline anchors `[[id]]`, `[[[ref]]]`, and a role before
                // `#text#`: `[.role]#`.
                if k + 1 < end
                    && m[k + 1] == b'['
                    && let Some(q) = find_close(m, k + 2, end.min(k + 256), b"]]")
                {
                    let q = if q < end && m[q] == b']' { q + 1 } else { q };
                    blank(m, k, q);
                    k = q;
                    continue;
                }
                if let Some(q) = bracket_close(m, k, end.min(k + 256))
                    && q + 1 < end
                    && matches!(m[q + 1], b'#' | b'_' | b'*' | b'`' | b'+' | b'^' | b'~')
                    && !m[k + 1..q].contains(&b' ')
                {
                    blank(m, k, q + 1);
                    k = q + 1;
                    continue;
                }
            }
            b'(' if m[k..end].starts_with(b"(((") => {
                if let Some(q) = find_close(m, k + 3, end.min(k + 512), b")))") {
                    blank(m, k, q);
                    k = q;
                    continue;
                }
            }
            b'(' if m[k..end].starts_with(b"((") => {
                if let Some(q) = find_close(m, k + 2, end.min(k + 512), b"))") {
                    blank(m, k, k + 2);
                    blank(m, q - 2, q);
                    k = q;
                    continue;
                }
            }
            b'*' | b'_' | b'#' | b'^' | b'~' => {
                // Emphasis marks, at a word's edge.
                let next = if k + 1 < end { m[k + 1] } else { b' ' };
                if !word(prev) || !word(next) {
                    blank(m, k, k + 1);
                }
                k += 1;
                continue;
            }
            c if c.is_ascii_alphanumeric() => {
                // A word: only one starting with a lowercase letter and
                // followed by `:` may be a macro; the rest of it starts nothing.
                let n = 1 + m[k + 1..end]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .count();
                if c.is_ascii_lowercase()
                    && !word(prev)
                    && m.get(k + n) == Some(&b':')
                    && let Some(q) = inline_macro(m, k, end, events)
                {
                    k = q;
                    continue;
                }
                k += n;
                continue;
            }
            b'&' => {
                // A character reference (`&nbsp;`, `&#8217;`) is not a word.
                let n = m[k + 1..end.min(k + 12)]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'#')
                    .count();
                if n > 0 && m.get(k + 1 + n) == Some(&b';') {
                    blank(m, k, k + n + 2);
                    k += n + 2;
                    continue;
                }
            }
            _ => {}
        }
        k += 1;
    }
}

/// An inline macro or URL starting at `k`: masks it (or its target) and
/// returns where it ends.
fn inline_macro(
    m: &mut [u8],
    k: usize,
    end: usize,
    events: &mut Vec<(usize, usize, Event)>,
) -> Option<usize> {
    let n = m[k..end]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    let name = &m[k..k + n];
    if m.get(k + n) != Some(&b':') || k + n + 1 >= end {
        return None;
    }
    let code = CODE_MACROS.contains(&name);
    let text = TEXT_MACROS.contains(&name);
    if !code && !text {
        return None;
    }
    // The target: up to `[`, no whitespace.
    let t0 = k + n + 1;
    let mut q = t0;
    while q < end && !m[q].is_ascii_whitespace() && m[q] != b'[' {
        q += 1;
    }
    let is_url = matches!(name, b"https" | b"http" | b"ftp" | b"irc" | b"file");
    if q >= end || m[q] != b'[' {
        // A bare URL is left to the URL pass; a macro needs its brackets.
        return None;
    }
    if is_url && !m[t0..].starts_with(b"//") {
        return None;
    }
    let close = bracket_close(m, q, end)?;
    if name == b"pass" {
        let inner = &m[q + 1..close];
        if let Some(c) = inner
            .strip_prefix(b"<!--")
            .and_then(|c| c.strip_suffix(b"-->"))
            && let Some(ev) = std::str::from_utf8(c).ok().and_then(switch_event)
        {
            events.push((k, close + 1, ev));
        }
    }
    if code {
        blank(m, k, close + 1);
        return Some(close + 1);
    }
    blank(m, k, q + 1);
    blank(m, close, close + 1);
    // Attributes after the text: `[text,window=_blank]`, `[text^]`.
    let inner = q + 1..close;
    if let Some(c) = m[inner.clone()].iter().position(|&b| b == b',')
        && m[q + 1 + c..close].contains(&b'=')
    {
        blank(m, q + 1 + c, close);
    }
    if m[q + 1..close].starts_with(b"\"") {
        blank(m, q + 1, q + 2);
    }
    // The text is read on for its own markup.
    Some(q + 1)
}

#[cfg(test)]
mod tests {
    /// The masked text, each line trimmed at its end.
    fn masked(text: &str) -> String {
        let mut m = text.as_bytes().to_vec();
        super::mask(&mut m);
        let s = String::from_utf8(m).unwrap();
        s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
    }

    fn kept_words(text: &str) -> Vec<String> {
        masked(text)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn titles_paragraphs_and_lists_are_prose() {
        let text = "= Doc Title\nDan Allen <dan@example.com>\nv1.0, 2020-01-01\n:toc: left\n\n== Section one\n\nA paragraph with *bold* and _em_ words.\n\n* item one\n** item two\n. step\n1. first\n\nTerm:: its definition\n\n.A block title\nNOTE: careful here\n";
        assert_eq!(
            kept_words(text),
            [
                "Doc",
                "Title",
                "Section",
                "one",
                "A",
                "paragraph",
                "with",
                "bold",
                "and",
                "em",
                "words",
                "item",
                "one",
                "item",
                "two",
                "step",
                "first",
                "Term",
                "its",
                "definition",
                "A",
                "block",
                "title",
                "careful",
                "here"
            ]
        );
    }

    #[test]
    fn verbatim_blocks_comments_and_attributes_are_masked() {
        let text = "Prose.\n\n----\nlisting code\n----\n\n....\nliteral code\n....\n\n++++\n<b>pass</b>\n++++\n\n[source,java]\nsource paragraph\n\n[source]\n--\nopen code\n--\n\n```rust\nfenced code\n```\n\n// line comment\n\n////\nblock comment\n////\n\n:attr-name: attribute value\n\n indented literal\n\nifdef::backend-html5[]\nendif::[]\nifdef::env[kept text]\ninclude::partial.adoc[]\nimage::diagram.png[Alt text]\n[[anchor-id]]\n[#id.role]\nEnd.\n";
        assert_eq!(kept_words(text), ["Prose", "kept", "text", "End"]);
    }

    #[test]
    fn compound_blocks_and_tables_are_prose() {
        let text = "====\nexample words\n====\n\n****\nsidebar words\n****\n\n[quote, Someone]\n____\nquote words\n____\n\n[cols=\"1,1\"]\n|===\n|Header one |Header two\n\n|cell one\na|cell two\nl|literal cell\n|===\n";
        assert_eq!(
            kept_words(text),
            [
                "example", "words", "sidebar", "words", "quote", "words", "Header", "one",
                "Header", "two", "cell", "one", "cell", "two"
            ]
        );
    }

    #[test]
    fn inline_code_passthroughs_macros_and_references() {
        let text = "Use `code` and ``more`` and +plus+ and pass:[raw] and {attr} here.\nSee link:https://x.example/a[the guide] and xref:other.adoc#sec[other page] and <<sec-id>> and <<sec-id,that section>>.\nVisit https://example.com[our site] or https://bare.example/path now.\nPress kbd:[Ctrl+C] and image:icon.png[an icon] and footnote:[a note].\nSet `'toc' => 'left'` and the \"`quoted`\" word and [.role]#styled# text and stem:[x^2].\nRead {url-home}/docs[the `code` docs]&nbsp;now, [.path]_a.adoc_ and xref:x[A{nbsp}B].\n";
        assert_eq!(
            kept_words(text),
            [
                "Use", "and", "and", "and", "and", "here", "See", "the", "guide", "and", "other",
                "page", "and", "and", "that", "section", "Visit", "our", "site", "or", "now",
                "Press", "and", "and", "a", "note", "Set", "and", "the", "quoted", "word", "and",
                "styled", "text", "and", "Read", "the", "docs", "now", "a", "adoc", "and", "A",
                "B"
            ]
        );
    }

    #[test]
    fn offsets_and_newlines_are_kept() {
        let text = "----\ncode\n----\nWord `x` é.\n";
        let mut m = text.as_bytes().to_vec();
        super::mask(&mut m);
        assert_eq!(m.len(), text.len());
        assert_eq!(
            String::from_utf8(m).unwrap(),
            "    \n    \n    \nWord     é.\n"
        );
    }

    #[test]
    fn switch_comments() {
        let text = "one\n// kapi off\ntwo\n// kapi on\nthree\npass:[<!-- vale off -->]\nfour\n";
        assert_eq!(kept_words(text), ["one", "three"]);
        let mut m = "a\n// kapi off: Quickcast\nb\n// kapi on: Quickcast\n"
            .as_bytes()
            .to_vec();
        let sw = super::mask(&mut m);
        assert_eq!(sw.len(), 1);
        assert_eq!(sw[0].selectors, ["Quickcast"]);
    }

    #[test]
    fn code_inside_cross_reference_text_is_masked() {
        // Asciidoctor renders `<<id,`Type`>>` as code in a link.
        let text = "See <<sec,`DataBuffer`>> and <<sec, `<tx:annotation-driven/>`>> and <<sec,The `Resource` Interface>>.\n";
        assert_eq!(kept_words(text), ["See", "and", "and", "The", "Interface"]);
    }

    #[test]
    fn monospace_runs_and_passthroughs_inside_monospace_are_code() {
        // `"` before a backtick opens a typographic quote only with its
        // closing `` `" ``; a run of backticks closes as a whole; a
        // passthrough inside monospace cannot close it.
        let text = "Example: \"```nvme-cli``` and `cryptsetup` are here\". See `+++`Find all users`()+++` now, and \"`quoted`\" prose.\n";
        assert_eq!(
            kept_words(text),
            [
                "Example", "and", "are", "here", "See", "now", "and", "quoted", "prose"
            ]
        );
    }

    #[test]
    fn table_columns_styled_literal_or_monospace_are_code() {
        // `cols` styles whole columns; the implicit header row is not
        // styled by column; cells run on over lines.
        let text = "[cols=\"1,2m,1\"]\n|===\n|Name |Example |Description\n\n|items\n|- items.each do \\|item\\|\n|Provides the items.\nMore text.\n\n|id\n|div id=id\n|The id.\n|===\n\n[cols=\"2*l,1\",options=\"header\"]\n|===\n|A |B |C\n|x = 1 |y = 2 |words\n|===\n";
        assert_eq!(
            kept_words(text),
            [
                "Name",
                "Example",
                "Description",
                "items",
                "Provides",
                "the",
                "items",
                "More",
                "text",
                "id",
                "The",
                "id",
                "A",
                "B",
                "C",
                "words"
            ]
        );
    }

    #[test]
    fn an_asciidoc_cell_starts_a_block() {
        // The text after `a|` is a document of its own: an indented line
        // is a literal paragraph.
        let text =
            "|===\n^|CLI ^|API\n\na|\n $ asciidoctor document.adoc\n\na|\nSome words.\n|===\n";
        assert_eq!(kept_words(text), ["CLI", "API", "Some", "words"]);
    }

    #[test]
    fn unclosed_openers_stay_linear() {
        let text = "`a +b ``c $$d <<e ((( f \"`g `+++h\n".repeat(20_000);
        let start = std::time::Instant::now();
        let mut m = text.as_bytes().to_vec();
        super::mask(&mut m);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
