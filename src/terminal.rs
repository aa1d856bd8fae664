//! Text shown on a terminal: what would steer it is shown, never obeyed.
//!
//! Notes, actor names, forms, pull requests, file names and the lines of
//! a checked file reach a person's terminal from an agent, a remote, a
//! commit or a work tree. A carriage return or an escape sequence in one
//! can erase its own line and print a fake one (`\r\x1b[2K`); a bidi
//! override can reorder what follows it on the line (Trojan Source). Every
//! human format shows such characters as Rust writes them in a string
//! literal (`\r`, `\u{1b}`, `\u{202e}`), through [`escape`]. JSON, SARIF
//! and GitHub annotations stay exact: each has its own escaping.
//!
//! Escape last: after a value is cut to fit, so a cut never splits an
//! escape.

use std::borrow::Cow;

/// Whether `c` would steer a terminal or reorder a line: a C0 control
/// (line ends and tabs too), DEL, a C1 control (U+0080–U+009F), a bidi
/// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069), a bidi
/// mark (U+200E, U+200F, U+061C), or a line or paragraph separator
/// (U+2028, U+2029).
pub fn steers(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `text` with every character that [`steers`] shown as an escape;
/// borrowed when there is none (the common case).
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_but(text, |_| false)
}

/// [`escape`] for text kapi itself breaks into lines (an error quoting
/// git's words): every line end is kept, everything else that steers is
/// escaped. Never for a value alone: a value never gets to start a line.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_but(text, |c| c == '\n')
}

/// [`escape`], keeping the characters `keep` names (a diff's tabs).
pub fn escape_but(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let hostile = |c: char| steers(c) && !keep(c);
    if !text.chars().any(hostile) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hostile(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Push `c` as shown: itself, or its escape when it [`steers`].
pub fn push_shown(out: &mut String, c: char) {
    if steers(c) {
        push_escaped(out, c);
    } else {
        out.push(c);
    }
}

/// `\t`, `\r`, `\n`, `\0`, or `\u{…}` in lower-case hex, as
/// `char::escape_debug` writes them.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\0' => out.push_str("\\0"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_steers_a_terminal_is_shown_as_rust_escapes_it() {
        assert!(matches!(escape("Quickcast · é 漢字"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\r\x1b[2Kb\x7f\u{9b}\u{202e}c\u{2066}\u{2069}\u{200f}\u{2028}"),
            "a\\r\\u{1b}[2Kb\\u{7f}\\u{9b}\\u{202e}c\\u{2066}\\u{2069}\\u{200f}\\u{2028}"
        );
        assert_eq!(escape("a\tb\nc\0"), "a\\tb\\nc\\0");
        assert_eq!(
            escape_lines("one\x1b[1A\ntwo\r\n"),
            "one\\u{1b}[1A\ntwo\\r\n"
        );
        // The same as Rust's own escape, for every control and override.
        for c in (0u32..0xa0).chain(0x202a..=0x202e).chain(0x2066..=0x2069) {
            let c = char::from_u32(c).unwrap();
            if steers(c) && c != '\'' && c != '"' {
                assert_eq!(
                    escape(&c.to_string()),
                    c.escape_debug().to_string(),
                    "{c:?}"
                );
            }
        }
        let mut s = String::new();
        push_shown(&mut s, 'é');
        push_shown(&mut s, '\x1b');
        assert_eq!(s, "é\\u{1b}");
    }
}
