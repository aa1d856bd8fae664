//! Front matter: the YAML between a first `---` line and the next `---`
//! line, read as YAML 1.2 by `yaml-rust2` (through the bounded reader in
//! [`crate::formats::yaml`]: quoted strings and their escapes, block
//! scalars, comments, flow and block collections, anchors and aliases), then
//! mapped to the shapes the vault reads ([`Value`]).
//!
//! Front matter is untrusted input. What stays kapi's own, around the
//! library, and why:
//! - the framing: front matter is a Markdown convention, not YAML, so the
//!   library cannot say where it ends; it must close within the first
//!   [`FRONT_MATTER_LIMIT`] bytes, the prefix a denied file is read through;
//! - the bounds the library does not set: nesting depth, and what aliases
//!   may repeat (no more than the prefix itself could hold, so a "billion
//!   laughs" is refused, not expanded), checked as its events arrive
//!   ([`LIMITS`]); at most [`MAX_KEYS`] keys and [`MAX_ITEMS`] items in a
//!   list or mapping kapi keeps;
//! - tags are refused: they change what a value is in ways kapi does not
//!   model, and no front-matter format uses them.
//!
//! Numbers, booleans, dates and nulls are kept as the text written (a null
//! as an empty string); what kapi does not read (deeper nesting, a list
//! inside a list) is left out.

use std::collections::BTreeMap;

use crate::formats::yaml::{self, Limits, Node};

/// The prefix through which front matter is inspected: it must close within it.
pub(crate) const FRONT_MATTER_LIMIT: usize = 64 * 1024;
/// Keys of the front matter's top-level mapping.
const MAX_KEYS: usize = 256;
/// Items of one list, or keys of one mapping, under a top-level key.
const MAX_ITEMS: usize = 256;
/// The bounds on the YAML: far deeper than any front matter nests, and no
/// more nodes or text than the prefix could hold without aliases.
const LIMITS: Limits = Limits {
    depth: 16,
    nodes: FRONT_MATTER_LIMIT,
    bytes: FRONT_MATTER_LIMIT,
    refuse_tags: true,
};

/// One front-matter value, as far as the vault reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar's text as YAML reads it (after quotes, escapes and folding);
    /// a null (`~`, `null`, nothing) is empty.
    Str(String),
    /// A list's items: scalars ([`Value::Str`]) and mappings
    /// ([`Value::Map`], such as `- cites: E-001`); a list inside a list is
    /// left out.
    List(Vec<Value>),
    /// A mapping's scalar entries; entries whose value is a collection are
    /// left out.
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

    /// A scalar or a list's scalar items, as a list of strings.
    pub(crate) fn list(&self, key: &str) -> Vec<String> {
        match self.fields.get(key) {
            Some(Value::Str(s)) if !s.is_empty() => vec![s.clone()],
            Some(Value::List(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A list's items, or a lone scalar or mapping as one item.
    pub(crate) fn items(&self, key: &str) -> &[Value] {
        match self.fields.get(key) {
            Some(Value::List(items)) => items,
            Some(v) => std::slice::from_ref(v),
            None => &[],
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
    /// Not YAML, or YAML past a bound; `line` is the file's line.
    #[error("line {line}: {what}")]
    Syntax { line: usize, what: String },
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
    // The YAML starts on the file's second line.
    let doc = yaml::parse_bounded(text, &LIMITS).map_err(|e| err(e.line + 1, e.message))?;
    let fields = fields(doc)?;
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

fn err(line: usize, what: impl Into<String>) -> FrontMatterError {
    FrontMatterError::Syntax {
        line,
        what: what.into(),
    }
}

/// A scalar's text, a null as empty; `None` for a collection.
fn text(node: &Node) -> Option<String> {
    match &node.value {
        yaml::Value::Scalar { .. } if node.is_null() => Some(String::new()),
        yaml::Value::Scalar { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The top-level mapping, mapped to kapi's shapes.
fn fields(doc: Node) -> Result<BTreeMap<String, Value>, FrontMatterError> {
    let pairs = match doc.value {
        yaml::Value::Mapping(pairs) => pairs,
        // Nothing but comments, or nothing at all.
        yaml::Value::Scalar { .. } if doc.is_null() => return Ok(BTreeMap::new()),
        _ => {
            return Err(err(
                doc.line + 1,
                format!("the front matter is {}, not a mapping of keys", doc.kind()),
            ));
        }
    };
    if pairs.len() > MAX_KEYS {
        let line = pairs[MAX_KEYS].0.line + 1;
        return Err(err(line, format!("more than {MAX_KEYS} keys")));
    }
    let mut fields = BTreeMap::new();
    for (key, value) in pairs {
        // A key that is a collection is nothing kapi reads.
        let Some(key) = key.as_str() else { continue };
        let value = match value.value {
            yaml::Value::Scalar { .. } => Value::Str(text(&value).unwrap_or_default()),
            yaml::Value::Sequence(items) => {
                if items.len() > MAX_ITEMS {
                    let line = items[MAX_ITEMS].line + 1;
                    return Err(err(line, format!("more than {MAX_ITEMS} list items")));
                }
                Value::List(
                    items
                        .into_iter()
                        .filter_map(|item| match item.value {
                            yaml::Value::Scalar { .. } => text(&item).map(Value::Str),
                            yaml::Value::Mapping(pairs) => Some(Value::Map(scalars(pairs))),
                            yaml::Value::Sequence(_) => None,
                        })
                        .collect(),
                )
            }
            yaml::Value::Mapping(pairs) => {
                if pairs.len() > MAX_ITEMS {
                    let line = pairs[MAX_ITEMS].0.line + 1;
                    return Err(err(line, format!("more than {MAX_ITEMS} mapping keys")));
                }
                Value::Map(scalars(pairs))
            }
        };
        fields.insert(key.to_string(), value);
    }
    Ok(fields)
}

/// A mapping's entries whose key and value are scalars.
fn scalars(pairs: Vec<(Node, Node)>) -> BTreeMap<String, String> {
    pairs
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?.to_string(), text(v)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Result<FrontMatter, FrontMatterError> {
        parse(text.as_bytes())
    }

    fn syntax(text: &str) -> (usize, String) {
        match fm(text) {
            Err(FrontMatterError::Syntax { line, what }) => (line, what),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn what_the_old_subset_read_reads_the_same() {
        let text = "---\nid: D-001\ntitle: \"Review: policy\" \nstatus: approved # ok\nsupersedes: [D-000, 'D-00''x']\nlinks:\n  - cites: E-001\n  - informs: S-001\napproval:\n  by: Ana\n  sha256: abc\n---\nbody\n";
        let f = fm(text).unwrap();
        assert_eq!(f.str("id"), Some("D-001"));
        assert_eq!(f.str("title"), Some("Review: policy"));
        assert_eq!(f.str("status"), Some("approved"));
        assert_eq!(f.list("supersedes"), ["D-000", "D-00'x"]);
        let pair = |k: &str, v: &str| Value::Map(BTreeMap::from([(k.into(), v.into())]));
        assert_eq!(
            f.items("links"),
            [pair("cites", "E-001"), pair("informs", "S-001")]
        );
        assert_eq!(f.map("approval").unwrap()["by"], "Ana");
        assert_eq!(&text.as_bytes()[f.body_offset..], b"body\n");
    }

    #[test]
    fn reads_yaml_as_yaml_reads_it() {
        let text = concat!(
            "---\r\n",
            "# a comment line\n",
            "title: \"Tabs\\tand \\\"quotes\\\" \\u00e9\"\n",
            "single: 'it''s'\n",
            "literal: |\n  line one\n  line two\n",
            "folded: >-\n  one\n  two\n",
            "plain: a long\n  title folded\n",
            "weight: 30\t# a comment after a tab\n",
            "draft: false\n",
            "date: 2018-09-19 18:00:00 +0530\n",
            "version: 3.8.4\n",
            "empty:\n",
            "tilde: ~\n",
            "quoted_null: \"null\"\n",
            "flow: [a, \"b, c\", {x: y}, [nested]]\n",
            "menu:\n  docs:\n    parent: cm\n    weight: 30\n  name: Docs\n",
            "anchored: &who Ana Lima\n",
            "approval:\n  by: *who\n  on: 2026-01-14\n",
            "---\r\n",
            "body\n",
        );
        let f = fm(text).unwrap();
        assert_eq!(f.str("title"), Some("Tabs\tand \"quotes\" é"));
        assert_eq!(f.str("single"), Some("it's"));
        assert_eq!(f.str("literal"), Some("line one\nline two\n"));
        assert_eq!(f.str("folded"), Some("one two"));
        assert_eq!(f.str("plain"), Some("a long title folded"));
        assert_eq!(f.str("weight"), Some("30"));
        assert_eq!(f.str("draft"), Some("false"));
        assert_eq!(f.str("date"), Some("2018-09-19 18:00:00 +0530"));
        assert_eq!(f.str("version"), Some("3.8.4"));
        assert_eq!(f.fields["empty"], Value::Str(String::new()));
        assert_eq!(f.str("tilde"), None);
        assert_eq!(f.str("quoted_null"), Some("null"));
        // A mapping item is kept, a list inside the list is left out.
        assert_eq!(f.list("flow"), ["a", "b, c"]);
        assert_eq!(f.items("flow").len(), 3);
        // Only the scalar entries of a mapping; `docs` nests deeper.
        let menu = f.map("menu").unwrap();
        assert_eq!(menu.keys().collect::<Vec<_>>(), ["name"]);
        let approval = f.map("approval").unwrap();
        assert_eq!(approval["by"], "Ana Lima");
        assert_eq!(approval["on"], "2026-01-14");
        assert_eq!(&text.as_bytes()[f.body_offset..], b"body\n");
    }

    #[test]
    fn empty_front_matter_has_no_fields() {
        for text in ["---\n---\n", "---\n# only a comment\n---\nbody\n"] {
            assert_eq!(fm(text).unwrap().fields, BTreeMap::new(), "{text:?}");
        }
    }

    #[test]
    fn fails_closed() {
        assert_eq!(fm("id: x\n"), Err(FrontMatterError::Missing));
        assert_eq!(fm("---\nid: x\n"), Err(FrontMatterError::Unterminated));
        assert_eq!(
            parse(b"---\nid: \xff\n---\n"),
            Err(FrontMatterError::NotUtf8)
        );
        for (bad, line, what) in [
            ("---\nid: x\nid: y\n---\n", 3, "appears twice"),
            ("---\nid x\n---\n", 2, "not a mapping"),
            ("---\n- a\n- b\n---\n", 2, "not a mapping"),
            ("---\ntitle: Review: policy\n---\n", 2, "not valid YAML"),
            ("---\nid: \"open\n---\n", 2, "not valid YAML"),
            ("---\nid: !!str x\n---\n", 2, "tag (`!!str`)"),
            ("---\nid: !custom x\n---\n", 2, "tag"),
            ("---\nid: *nowhere\n---\n", 2, "not valid YAML"),
            ("---\na: 1\n--- b\n---\n", 3, "more than one YAML document"),
        ] {
            let (l, w) = syntax(bad);
            assert!(w.contains(what), "{bad:?}: {w}");
            assert_eq!(l, line, "{bad:?}: {w}");
        }
    }

    #[test]
    fn caps_keys_and_items() {
        let mut keys = String::from("---\n");
        for i in 0..=MAX_KEYS {
            keys.push_str(&format!("k{i}: v\n"));
        }
        keys.push_str("---\n");
        assert!(syntax(&keys).1.contains("keys"));
        let items = format!("---\nl: [{}]\n---\n", vec!["x"; MAX_ITEMS + 1].join(", "));
        assert!(syntax(&items).1.contains("list items"));
        let ok = format!("---\nl: [{}]\n---\n", vec!["x"; MAX_ITEMS].join(", "));
        assert_eq!(fm(&ok).unwrap().list("l").len(), MAX_ITEMS);
    }

    #[test]
    fn billion_laughs_is_refused_not_expanded() {
        let mut text = String::from("---\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..10 {
            let refs = vec![format!("*l{}", i - 1); 9].join(", ");
            text.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        text.push_str("---\n");
        let started = std::time::Instant::now();
        let (_, what) = syntax(&text);
        assert!(what.contains("an alias counts"), "{what}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn deep_nesting_is_refused() {
        // Sequences 10,000 deep in block style (compact, on one line).
        let (line, what) = syntax(&format!("---\nk:\n  {}x\n---\n", "- ".repeat(10_000)));
        assert_eq!(line, 3, "{what}");
        assert!(what.contains("nesting deeper than 16"), "{what}");
        // In flow style the library's scanner may look ahead for a key
        // and stop itself at 255 levels, before the events get that deep.
        for text in [
            format!(
                "---\nk: {}{}\n---\n",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
            format!(
                "---\nk: {}\n---\n",
                "{a: ".repeat(10_000) + &"}".repeat(10_000)
            ),
        ] {
            let (line, what) = syntax(&text);
            assert_eq!(line, 2, "{what}");
            assert!(
                what.contains("recursion limit exceeded") || what.contains("deeper than 16"),
                "{what}"
            );
        }
        // Twenty levels of flow: the library reads them, the bound refuses.
        let text = format!("---\nk: {}{}\n---\n", "[".repeat(20), "]".repeat(20));
        assert!(syntax(&text).1.contains("nesting deeper than 16"));
        let ok = "---\nk:\n  - - - - x\n---\n";
        assert!(fm(ok).is_ok());
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
        fn never_panics(text in "(---\n)?([ a-z:\\[\\]{}\"'#&*!|>,?-]{0,20}\n){0,12}(---\n)?") {
            let _ = fm(&text);
        }
    }
}
