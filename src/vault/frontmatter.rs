//! A bounded parser for the YAML front-matter subset the vault uses.
//!
//! Front matter is untrusted input. The parser accepts only what the vault
//! format documents (`docs/vault.md`) and fails closed on anything else:
//! top-level `key: scalar`, flow lists `key: [a, b]`, block lists
//! (`key:` then `  - item` lines) and one level of nested mapping (`key:`
//! then `  sub: scalar` lines). Anchors, aliases, tags, block scalars and
//! nesting deeper than one level are errors, never guesses.

use std::collections::BTreeMap;

/// The prefix through which front matter is inspected: it must close within it.
pub(crate) const FRONT_MATTER_LIMIT: usize = 64 * 1024;
const MAX_KEYS: usize = 256;
const MAX_ITEMS: usize = 256;

/// One front-matter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(String),
    List(Vec<String>),
    Map(BTreeMap<String, String>),
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Parsed front matter and where the body starts in the file's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FrontMatter {
    pub fields: BTreeMap<String, Value>,
    pub body_offset: usize,
}

impl FrontMatter {
    pub(crate) fn str(&self, key: &str) -> Option<&str> {
        self.fields
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    /// A scalar or a list, as a list of strings.
    pub(crate) fn list(&self, key: &str) -> Vec<String> {
        match self.fields.get(key) {
            Some(Value::Str(s)) if !s.is_empty() => vec![s.clone()],
            Some(Value::List(items)) => items.clone(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn map(&self, key: &str) -> Option<&BTreeMap<String, String>> {
        match self.fields.get(key) {
            Some(Value::Map(m)) => Some(m),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    #[error("the file does not start with a `---` front-matter line")]
    Missing,
    #[error("the front matter does not close within {FRONT_MATTER_LIMIT} bytes")]
    Unterminated,
    #[error("the front matter is not UTF-8")]
    NotUtf8,
    #[error("line {line}: {what}")]
    Syntax { line: usize, what: &'static str },
}

/// Parse the front matter at the start of `bytes` (a file or its prefix).
pub fn parse(bytes: &[u8]) -> Result<FrontMatter, FrontMatterError> {
    let first_end = if bytes.starts_with(b"---\n") {
        4
    } else if bytes.starts_with(b"---\r\n") {
        5
    } else {
        return Err(FrontMatterError::Missing);
    };
    let window = &bytes[..bytes.len().min(FRONT_MATTER_LIMIT)];
    let (text_end, body_offset) =
        find_close(window, first_end).ok_or(FrontMatterError::Unterminated)?;
    let text =
        std::str::from_utf8(&bytes[first_end..text_end]).map_err(|_| FrontMatterError::NotUtf8)?;
    let fields = parse_fields(text)?;
    Ok(FrontMatter {
        fields,
        body_offset,
    })
}

/// The end of the front-matter text and the start of the body.
fn find_close(window: &[u8], start: usize) -> Option<(usize, usize)> {
    let mut pos = start;
    while pos < window.len() {
        let line_end = window[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| pos + i);
        let (line, next) = match line_end {
            Some(e) => (&window[pos..e], e + 1),
            None => (&window[pos..], window.len()),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line == b"---" {
            if line_end.is_none() && window.len() == FRONT_MATTER_LIMIT {
                return None;
            }
            return Some((pos, next));
        }
        line_end?;
        pos = next;
    }
    None
}

fn err(line: usize, what: &'static str) -> FrontMatterError {
    FrontMatterError::Syntax { line, what }
}

fn parse_fields(text: &str) -> Result<BTreeMap<String, Value>, FrontMatterError> {
    let mut fields = BTreeMap::new();
    // The key whose `key:` line had no value, waiting for its block.
    let mut open: Option<(String, usize)> = None;
    let mut block: Option<Value> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 2;
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indented = line.len() != trimmed.len();
        if indented {
            if open.is_none() {
                return Err(err(n, "an indented line belongs to no key"));
            }
            if let Some(item) =
                trimmed
                    .strip_prefix("- ")
                    .or(if trimmed == "-" { Some("") } else { None })
            {
                let item = scalar(item.trim(), n)?;
                match block.get_or_insert_with(|| Value::List(Vec::new())) {
                    Value::List(items) if items.len() < MAX_ITEMS => items.push(item),
                    Value::List(_) => return Err(err(n, "too many list items")),
                    _ => return Err(err(n, "a list item inside a mapping")),
                }
            } else {
                let (sub, value) = split_key(trimmed, n)?;
                if value.is_empty() && trimmed.ends_with(':') {
                    return Err(err(n, "nesting deeper than one level"));
                }
                let value = scalar(value, n)?;
                match block.get_or_insert_with(|| Value::Map(BTreeMap::new())) {
                    Value::Map(m) if m.len() < MAX_ITEMS => {
                        if m.insert(sub.to_string(), value).is_some() {
                            return Err(err(n, "a duplicate key"));
                        }
                    }
                    Value::Map(_) => return Err(err(n, "too many mapping keys")),
                    _ => return Err(err(n, "a mapping key inside a list")),
                }
            }
            continue;
        }
        close_block(&mut fields, &mut open, &mut block)?;
        if fields.len() >= MAX_KEYS {
            return Err(err(n, "too many keys"));
        }
        let (key, value) = split_key(trimmed, n)?;
        if fields.contains_key(key) {
            return Err(err(n, "a duplicate key"));
        }
        if value.is_empty() {
            open = Some((key.to_string(), n));
        } else if let Some(inner) = value.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| err(n, "an unclosed flow list"))?;
            let mut items = Vec::new();
            for part in split_flow(inner, n)? {
                if items.len() >= MAX_ITEMS {
                    return Err(err(n, "too many list items"));
                }
                items.push(scalar(part.trim(), n)?);
            }
            fields.insert(key.to_string(), Value::List(items));
        } else {
            fields.insert(key.to_string(), Value::Str(scalar(value, n)?));
        }
    }
    close_block(&mut fields, &mut open, &mut block)?;
    Ok(fields)
}

fn close_block(
    fields: &mut BTreeMap<String, Value>,
    open: &mut Option<(String, usize)>,
    block: &mut Option<Value>,
) -> Result<(), FrontMatterError> {
    if let Some((key, _)) = open.take() {
        let value = block.take().unwrap_or(Value::Str(String::new()));
        fields.insert(key, value);
    }
    Ok(())
}

/// `key: rest` with a plain key of letters, digits, `_` and `-`.
fn split_key(line: &str, n: usize) -> Result<(&str, &str), FrontMatterError> {
    let (key, rest) = match line.split_once(':') {
        Some(kv) => kv,
        None => return Err(err(n, "a line without `key:`")),
    };
    if key.is_empty()
        || key.len() > 64
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(err(n, "a key that is not a plain name"));
    }
    if !rest.is_empty() && !rest.starts_with(' ') && !rest.starts_with('\t') {
        return Err(err(n, "a key without a space after `:`"));
    }
    Ok((key, rest.trim()))
}

/// Split a flow list's inside on commas outside quotes.
fn split_flow(inner: &str, n: usize) -> Result<Vec<&str>, FrontMatterError> {
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            (None, '[' | ']' | '{' | '}') => return Err(err(n, "a nested flow collection")),
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(err(n, "an unclosed quote"));
    }
    parts.push(&inner[start..]);
    Ok(parts)
}

/// One scalar: quoted (`"..."` or `'...'`) or plain. Plain scalars lose a
/// trailing ` # comment`; YAML's special starts are refused.
fn scalar(text: &str, n: usize) -> Result<String, FrontMatterError> {
    if let Some(rest) = text.strip_prefix('"') {
        let inner = rest
            .strip_suffix('"')
            .ok_or_else(|| err(n, "an unclosed double quote"))?;
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    _ => return Err(err(n, "an unsupported escape")),
                },
                '"' => return Err(err(n, "a stray double quote")),
                c => out.push(c),
            }
        }
        return Ok(out);
    }
    if let Some(rest) = text.strip_prefix('\'') {
        let inner = rest
            .strip_suffix('\'')
            .ok_or_else(|| err(n, "an unclosed single quote"))?;
        if inner.replace("''", "").contains('\'') {
            return Err(err(n, "a stray single quote"));
        }
        return Ok(inner.replace("''", "'"));
    }
    let plain = match text.find(" #") {
        Some(i) => text[..i].trim_end(),
        None => text,
    };
    if let Some(c) = plain.chars().next()
        && matches!(c, '&' | '*' | '!' | '|' | '>' | '{' | '[' | '%' | '@' | '`')
    {
        return Err(err(n, "an unsupported YAML construct"));
    }
    Ok(plain.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Result<FrontMatter, FrontMatterError> {
        parse(text.as_bytes())
    }

    #[test]
    fn the_subset() {
        let text = "---\nid: D-001\ntitle: \"Review: policy\" \nstatus: approved # ok\nsupersedes: [D-000, 'D-00''x']\nlinks:\n  - cites: E-001\n  - informs: S-001\napproval:\n  by: Ana\n  sha256: abc\n---\nbody\n";
        let f = fm(text).unwrap();
        assert_eq!(f.str("id"), Some("D-001"));
        assert_eq!(f.str("title"), Some("Review: policy"));
        assert_eq!(f.str("status"), Some("approved"));
        assert_eq!(f.list("supersedes"), ["D-000", "D-00'x"]);
        assert_eq!(f.list("links"), ["cites: E-001", "informs: S-001"]);
        assert_eq!(f.map("approval").unwrap()["by"], "Ana");
        assert_eq!(&text.as_bytes()[f.body_offset..], b"body\n");
    }

    #[test]
    fn fails_closed() {
        assert_eq!(fm("id: x\n"), Err(FrontMatterError::Missing));
        assert_eq!(fm("---\nid: x\n"), Err(FrontMatterError::Unterminated));
        for bad in [
            "---\nid: &a x\n---\n",
            "---\nid: x\nid: y\n---\n",
            "---\n  id: x\n---\n",
            "---\nid x\n---\n",
            "---\na:\n  b:\n    c: d\n---\n",
            "---\nt: |\n  text\n---\n",
            "---\nl: [a, [b]]\n---\n",
        ] {
            assert!(
                matches!(fm(bad), Err(FrontMatterError::Syntax { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn must_close_within_the_prefix() {
        let mut text = String::from("---\ntitle: x\n");
        while text.len() < FRONT_MATTER_LIMIT + 10 {
            text.push_str("# padding padding padding\n");
        }
        text.push_str("---\n");
        assert_eq!(fm(&text), Err(FrontMatterError::Unterminated));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "(---\n)?([ a-z:\\[\\]\"'#&|>,-]{0,20}\n){0,12}(---\n)?") {
            let _ = fm(&text);
        }
    }
}
