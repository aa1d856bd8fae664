//! Regular-expression keys (Vale `swap` keys, vocabulary entries) read by a
//! regular-expression parser (`regex-syntax`), not by hand.
//!
//! A key whose language is finite and small becomes its literal forms,
//! exactly: alternations, optional parts, bounded repetition, character
//! classes of up to [`MAX_CLASS`] characters, escapes. `\s` (any class
//! holding a space) stands for one space; `\b` is dropped, since kapi matches
//! on word boundaries anyway. The rest of a key (look-around, unbounded
//! repetition, `.`, large classes) stays a regular expression, a *pattern*,
//! checked with `fancy-regex`. A key with look-around in some of its
//! top-level alternatives keeps its plain alternatives as literal forms.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::MAX_EXPANSION;

/// Largest character class expanded to literal forms.
pub const MAX_CLASS: usize = 16;

/// What a key stands for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expanded {
    /// Literal forms, in order, without duplicates.
    pub forms: Vec<String>,
    /// The alternatives that stay a regular expression, joined by `|`.
    pub pattern: Option<String>,
    /// The key started with `(?i)`.
    pub ignore_case: bool,
}

/// Read a key. `Err` only when the key is not a regular expression that
/// Vale's engine or `fancy-regex` can compile (with the reason).
pub fn expand_key(key: &str) -> Result<Expanded, String> {
    let (ignore_case, body) = match key.strip_prefix("(?i)") {
        Some(rest) => (true, rest),
        None => (false, key),
    };
    let mut out = Expanded {
        ignore_case,
        ..Default::default()
    };
    let alternatives = match literal_forms(body) {
        Ok(forms) => {
            push_forms(&mut out.forms, forms);
            Vec::new()
        }
        // A key regex-syntax parses but whose language is not small stays
        // whole; one it cannot parse (look-around) is split at its top
        // level, and each alternative is read on its own.
        Err(Unread::Large) => vec![body.to_string()],
        Err(Unread::Syntax) => {
            let mut rest = Vec::new();
            for alt in split_top_level(body) {
                match literal_forms(alt) {
                    Ok(forms) => push_forms(&mut out.forms, forms),
                    Err(_) => rest.push(alt.to_string()),
                }
            }
            rest
        }
    };
    if !alternatives.is_empty() {
        let pattern = alternatives.join("|");
        compile(&pattern, ignore_case, true)?;
        out.pattern = Some(pattern);
    }
    if out.forms.is_empty() && out.pattern.is_none() {
        return Err("expands to nothing".into());
    }
    Ok(out)
}

/// Read a key as one pattern, whatever its language (a key Vale matches
/// without word boundaries). `Err` when no engine can compile it.
pub fn whole_key(key: &str) -> Result<Expanded, String> {
    let (ignore_case, body) = match key.strip_prefix("(?i)") {
        Some(rest) => (true, rest),
        None => (false, key),
    };
    compile(body, ignore_case, false)?;
    Ok(Expanded {
        forms: Vec::new(),
        pattern: Some(body.to_string()),
        ignore_case,
    })
}

fn push_forms(out: &mut Vec<String>, forms: Vec<String>) {
    for f in forms {
        let f = f.trim().to_string();
        if !f.is_empty() && !out.contains(&f) {
            out.push(f);
        }
    }
}

/// The regular expression a pattern rule is checked with: with `words`, the
/// key between word boundaries (as Vale's word template `\b(?:key)\b`),
/// else the key alone (its `nonword: true`); ignoring case if asked.
pub fn compile(
    pattern: &str,
    ignore_case: bool,
    words: bool,
) -> Result<fancy_regex::Regex, String> {
    let flags = if ignore_case { "(?mi)" } else { "(?m)" };
    let expr = if words {
        format!(r"{flags}\b(?:{pattern})\b")
    } else {
        format!(r"{flags}(?:{pattern})")
    };
    fancy_regex::RegexBuilder::new(&expr)
        .backtrack_limit(100_000)
        .build()
        .map_err(|e| format!("not a regular expression kapi can read: {e}"))
}

/// The pattern without its look-around groups (`(?=..)`, `(?!..)`,
/// `(?<=..)`, `(?<!..)`): it matches wherever the pattern does, and more;
/// `None` when there are none. Without look-around a regular expression
/// runs on a linear-time engine, so it finds where to try the pattern.
pub fn without_lookaround(p: &str) -> Option<String> {
    let b = p.as_bytes();
    let mut out = String::with_capacity(p.len());
    let mut i = 0;
    let mut found = false;
    let mut class = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            let n = p[i + 1..].chars().next().map_or(0, char::len_utf8);
            out.push_str(&p[i..i + 1 + n]);
            i += 1 + n;
            continue;
        }
        if class {
            if c == b']' {
                class = false;
            }
        } else if c == b'[' {
            class = true;
        } else if c == b'('
            && ["(?=", "(?!", "(?<=", "(?<!"]
                .iter()
                .any(|open| p[i..].starts_with(open))
        {
            // Skip to the matching `)`.
            let mut depth = 0usize;
            let mut in_class = false;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'\\' => j += 1,
                    b'[' if !in_class => in_class = true,
                    b']' if in_class => in_class = false,
                    b'(' if !in_class => depth += 1,
                    b')' if !in_class => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            found = true;
            i = j + 1;
            continue;
        }
        let n = p[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&p[i..i + n]);
        i += n;
    }
    found.then_some(out)
}

enum Unread {
    /// regex-syntax cannot read it (look-around, backreferences, bad syntax).
    Syntax,
    /// Its language is infinite or too large to list.
    Large,
}

/// The literal forms of a key, if its language is finite and small.
fn literal_forms(pattern: &str) -> Result<Vec<String>, Unread> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|_| Unread::Syntax)?;
    let forms = forms(&hir).map_err(|_| Unread::Large)?;
    Ok(forms)
}

fn bounded(v: Vec<String>) -> Result<Vec<String>, String> {
    if v.len() > MAX_EXPANSION {
        return Err(format!("expands to more than {MAX_EXPANSION} forms"));
    }
    Ok(v)
}

fn product(a: &[String], b: &[String]) -> Result<Vec<String>, String> {
    if a.len().saturating_mul(b.len()) > MAX_EXPANSION {
        return Err(format!("expands to more than {MAX_EXPANSION} forms"));
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            out.push(format!("{x}{y}"));
        }
    }
    Ok(out)
}

fn forms(h: &Hir) -> Result<Vec<String>, String> {
    match h.kind() {
        HirKind::Empty => Ok(vec![String::new()]),
        HirKind::Literal(l) => String::from_utf8(l.0.to_vec())
            .map(|s| vec![s])
            .map_err(|_| "a byte literal".to_string()),
        HirKind::Class(Class::Unicode(c)) => {
            let mut chars: Vec<char> = Vec::new();
            let mut space = false;
            for r in c.ranges() {
                let (a, b) = (r.start() as u32, r.end() as u32);
                if b - a > MAX_CLASS as u32 * 4 {
                    return Err(format!(
                        "a character class of more than {MAX_CLASS} characters"
                    ));
                }
                for c in (a..=b).filter_map(char::from_u32) {
                    if c.is_whitespace() {
                        space = true;
                    } else {
                        chars.push(c);
                    }
                }
            }
            if chars.len() > MAX_CLASS {
                return Err(format!(
                    "a character class of more than {MAX_CLASS} characters"
                ));
            }
            let mut out: Vec<String> = Vec::new();
            if space {
                out.push(" ".into());
            }
            out.extend(chars.into_iter().map(String::from));
            Ok(out)
        }
        HirKind::Class(Class::Bytes(_)) => Err("a byte class".into()),
        HirKind::Look(look) => match look {
            Look::WordAscii
            | Look::WordUnicode
            | Look::WordStartAscii
            | Look::WordEndAscii
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfAscii
            | Look::WordEndHalfAscii
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode => Ok(vec![String::new()]),
            other => Err(format!("an anchor ({other:?})")),
        },
        HirKind::Repetition(r) => {
            let max = r.max.ok_or("unbounded repetition")?;
            if max as usize > MAX_EXPANSION {
                return Err("a large repetition".into());
            }
            let sub = forms(&r.sub)?;
            let mut out = Vec::new();
            let mut power = vec![String::new()];
            for n in 0..=max {
                if n >= r.min {
                    out.extend(power.iter().cloned());
                    out = bounded(out)?;
                }
                if n < max {
                    power = product(&power, &sub)?;
                }
            }
            Ok(out)
        }
        HirKind::Capture(c) => forms(&c.sub),
        HirKind::Concat(parts) => {
            let mut acc = vec![String::new()];
            for p in parts {
                acc = product(&acc, &forms(p)?)?;
            }
            Ok(acc)
        }
        HirKind::Alternation(alts) => {
            let mut out = Vec::new();
            for a in alts {
                out.extend(forms(a)?);
                out = bounded(out)?;
            }
            Ok(out)
        }
    }
}

/// The top-level alternatives of a pattern (outside groups and classes).
fn split_top_level(p: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut class = false;
    let mut start = 0;
    let mut chars = p.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !class => {
                class = true;
                // `[]` and `[^]` start with a literal `]`.
                if let Some(&(_, '^')) = chars.peek() {
                    chars.next();
                }
                if let Some(&(_, ']')) = chars.peek() {
                    chars.next();
                }
            }
            ']' if class => class = false,
            '(' if !class => depth += 1,
            ')' if !class => depth = depth.saturating_sub(1),
            '|' if !class && depth == 0 => {
                out.push(&p[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&p[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(k: &str) -> Vec<String> {
        let e = expand_key(k).unwrap();
        assert_eq!(e.pattern, None, "{k}");
        e.forms
    }

    #[test]
    fn finite_keys_become_their_forms() {
        assert_eq!(f("(?:Quick cast|Quick-cast)"), ["Quick cast", "Quick-cast"]);
        assert_eq!(f("Quick ?cast"), ["Quickcast", "Quick cast"]);
        assert_eq!(f("[Gg]it[Hh]ub").len(), 4);
        assert_eq!(f(r"\bnode\.js\b"), ["node.js"]);
        assert_eq!(f("back[ -]end"), ["back end", "back-end"]);
        assert_eq!(f("ad[- ]?hoc"), ["adhoc", "ad hoc", "ad-hoc"]);
        assert_eq!(f(r"log\s?in"), ["login", "log in"]);
        assert_eq!(f(r"e-?mail|E-mail"), ["email", "e-mail", "E-mail"]);
        assert_eq!(f("a{1,2}h"), ["ah", "aah"]);
        assert_eq!(f(r"\u00e9t\u00e9"), ["été"]);
        let i = expand_key("(?i)java ?script").unwrap();
        assert!(i.ignore_case);
        assert_eq!(i.forms, ["javascript", "java script"]);
    }

    #[test]
    fn the_rest_stays_a_pattern() {
        for k in [r"\w+ing", "colou?rs.*", "[a-z]+ly", "(?:foo)+"] {
            let e = expand_key(k).unwrap();
            assert!(e.forms.is_empty(), "{k}");
            assert_eq!(e.pattern.as_deref(), Some(k));
        }
        let e = expand_key("(?<!dark )red|orange|yellow|green").unwrap();
        assert_eq!(e.forms, ["orange", "yellow", "green"]);
        assert_eq!(e.pattern.as_deref(), Some("(?<!dark )red"));
        assert!(expand_key("(unclosed").is_err());
        assert_eq!(
            without_lookaround(r"that is(?![.,])|(?<=\()x[(?=]").as_deref(),
            Some(r"that is|x[(?=]")
        );
        assert_eq!(without_lookaround("plain"), None);
    }

    #[test]
    fn a_variable_length_look_behind_is_a_pattern_matched_as_vale_matches_it() {
        // Red Hat's key: Vale's engine reads look-behinds of any length.
        let e = expand_key("(?<!.*-|program )operator").unwrap();
        assert_eq!(e.pattern.as_deref(), Some("(?<!.*-|program )operator"));
        let re = compile(e.pattern.as_deref().unwrap(), false, true).unwrap();
        let found = |t: &str| re.find_iter(t).filter_map(Result::ok).count();
        assert_eq!(found("the operator"), 1);
        assert_eq!(found("the program operator, a cluster-operator"), 0);
        assert!(compile("(?<=(?:ab)+)c|(?<!x{2,9})y", false, true).is_ok());
    }
}
