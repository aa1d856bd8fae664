//! YAML documents with line numbers, read by `yaml-rust2` (YAML 1.2: document
//! markers, quoted keys, flow collections, anchors and aliases, block
//! scalars, escapes). Vale reads its styles with a YAML library that refuses
//! a mapping holding the same key twice; so does this reader. Vale styles
//! and the vault's front matter both read through it, each within its
//! [`Limits`].

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

/// A YAML node and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub line: usize,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar as written (after quoting and escapes); `plain` when it was
    /// not quoted (so `true`, `null`, `~` and numbers keep their YAML meaning).
    Scalar {
        text: String,
        plain: bool,
    },
    Sequence(Vec<Node>),
    /// In the order written.
    Mapping(Vec<(Node, Node)>),
}

impl Node {
    /// The text of a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// A plain `null`, `~` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(&self.value, Value::Scalar { text, plain: true } if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// A scalar read as a YAML 1.2 boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match &self.value {
            Value::Scalar { text, plain: true } => match text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value under `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Mapping(pairs) => pairs
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// A short name of the node's type, for messages.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Scalar { .. } => "a scalar",
            Value::Sequence(_) => "a sequence",
            Value::Mapping(_) => "a mapping",
        }
    }
}

/// Why a text is not a YAML document kapi reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct YamlError {
    pub line: usize,
    pub message: String,
    pub kind: ErrorKind,
}

/// What kind of refusal a [`YamlError`] is, so a caller can say what its
/// own format makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not YAML at all, as the library reads it.
    Syntax,
    /// One mapping holds the same key twice (YAML 1.2 requires unique keys).
    Duplicate,
    /// More than one document.
    Documents,
    /// Past one of the [`Limits`].
    Bound,
    /// A tag, under limits that refuse them.
    Tag,
}

/// Bounds on one document, checked while the library's events arrive, so
/// hostile input stops early: nesting, and what aliases may repeat (each
/// alias costs the nodes and scalar bytes of the node it names, so "billion
/// laughs" stops at the bound instead of expanding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Collections open at once.
    pub depth: usize,
    /// Nodes in the document, counting what aliases repeat.
    pub nodes: usize,
    /// Bytes of scalar text in the document, counting what aliases repeat.
    pub bytes: usize,
    /// Refuse tags (`!x`, `!!str`); otherwise a tagged node reads as
    /// untagged.
    pub refuse_tags: bool,
}

impl Limits {
    /// For Vale styles: a project's own files, read whole. Far above any
    /// real style, low enough that no file exhausts memory or the stack.
    pub const STYLES: Limits = Limits {
        depth: 128,
        nodes: 1 << 20,
        bytes: 64 << 20,
        refuse_tags: false,
    };
}

/// A node's cost against the [`Limits`]: itself and everything under it.
#[derive(Debug, Clone, Copy, Default)]
struct Weight {
    nodes: usize,
    bytes: usize,
}

/// An open collection: the node, a mapping's pending key, its anchor, and
/// the weight of what it holds so far.
struct Open {
    node: Node,
    pending: Option<Node>,
    anchor: usize,
    weight: Weight,
}

struct Builder {
    limits: Limits,
    stack: Vec<Open>,
    anchors: std::collections::HashMap<usize, (Node, Weight)>,
    docs: Vec<Node>,
    total: Weight,
}

fn error(line: usize, kind: ErrorKind, message: String) -> YamlError {
    YamlError {
        line,
        message,
        kind,
    }
}

impl Builder {
    fn new(limits: Limits) -> Self {
        Self {
            limits,
            stack: Vec::new(),
            anchors: std::collections::HashMap::new(),
            docs: Vec::new(),
            total: Weight::default(),
        }
    }

    /// Count `w` more toward the document's bounds, before it is built.
    fn charge(&mut self, w: Weight, line: usize) -> Result<(), YamlError> {
        self.total.nodes = self.total.nodes.saturating_add(w.nodes);
        self.total.bytes = self.total.bytes.saturating_add(w.bytes);
        if self.total.nodes > self.limits.nodes {
            return Err(error(
                line,
                ErrorKind::Bound,
                format!(
                    "more than {} nodes (an alias counts every node it repeats); refused",
                    self.limits.nodes
                ),
            ));
        }
        if self.total.bytes > self.limits.bytes {
            return Err(error(
                line,
                ErrorKind::Bound,
                format!(
                    "more than {} bytes of text (an alias counts every byte it repeats); refused",
                    self.limits.bytes
                ),
            ));
        }
        Ok(())
    }

    fn tag(&self, tag: Option<&Tag>, line: usize) -> Result<(), YamlError> {
        match tag {
            Some(t) if self.limits.refuse_tags => {
                // The library resolves `!!x` to the core schema's prefix:
                // named as written.
                let handle = match t.handle.as_str() {
                    "tag:yaml.org,2002:" => "!!",
                    h => h,
                };
                Err(error(
                    line,
                    ErrorKind::Tag,
                    format!(
                        "a YAML tag (`{handle}{}`) is not read here; remove it",
                        t.suffix
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    fn open(&mut self, value: Value, anchor: usize, line: usize) -> Result<(), YamlError> {
        if self.stack.len() >= self.limits.depth {
            return Err(error(
                line,
                ErrorKind::Bound,
                format!("nesting deeper than {} levels; refused", self.limits.depth),
            ));
        }
        let one = Weight { nodes: 1, bytes: 0 };
        self.charge(one, line)?;
        self.stack.push(Open {
            node: Node { line, value },
            pending: None,
            anchor,
            weight: one,
        });
        Ok(())
    }

    /// Put a finished node (its weight already charged) into its parent.
    fn insert(&mut self, node: Node, weight: Weight, anchor: usize) -> Result<(), YamlError> {
        if anchor > 0 {
            // The anchor's copy is memory too: charged like the node.
            self.charge(weight, node.line)?;
            self.anchors.insert(anchor, (node.clone(), weight));
        }
        let Some(parent) = self.stack.last_mut() else {
            self.docs.push(node);
            return Ok(());
        };
        parent.weight.nodes += weight.nodes;
        parent.weight.bytes += weight.bytes;
        match &mut parent.node.value {
            Value::Sequence(items) => items.push(node),
            Value::Mapping(pairs) => match parent.pending.take() {
                None => parent.pending = Some(node),
                Some(key) => {
                    if let Some(text) = key.as_str()
                        && let Some((first, _)) =
                            pairs.iter().find(|(k, _)| k.as_str() == Some(text))
                    {
                        return Err(error(
                            key.line,
                            ErrorKind::Duplicate,
                            format!(
                                "the key {text:?} appears twice in one mapping (first on line {})",
                                first.line
                            ),
                        ));
                    }
                    pairs.push((key, node));
                }
            },
            Value::Scalar { .. } => {}
        }
        Ok(())
    }

    fn event(&mut self, ev: Event, line: usize) -> Result<(), YamlError> {
        match ev {
            Event::SequenceStart(anchor, tag) => {
                self.tag(tag.as_ref(), line)?;
                self.open(Value::Sequence(Vec::new()), anchor, line)
            }
            Event::MappingStart(anchor, tag) => {
                self.tag(tag.as_ref(), line)?;
                self.open(Value::Mapping(Vec::new()), anchor, line)
            }
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(open) => self.insert(open.node, open.weight, open.anchor),
                None => Ok(()),
            },
            Event::Scalar(text, style, anchor, tag) => {
                self.tag(tag.as_ref(), line)?;
                let weight = Weight {
                    nodes: 1,
                    bytes: text.len(),
                };
                self.charge(weight, line)?;
                let plain = style == TScalarStyle::Plain;
                let node = Node {
                    line,
                    value: Value::Scalar { text, plain },
                };
                self.insert(node, weight, anchor)
            }
            Event::Alias(id) => {
                // The library refuses an alias to an unknown anchor; an
                // alias to a collection still open (recursive) has none yet.
                let (node, weight) = self.anchors.get(&id).cloned().unwrap_or((
                    Node {
                        line,
                        value: Value::Scalar {
                            text: String::new(),
                            plain: true,
                        },
                    },
                    Weight { nodes: 1, bytes: 0 },
                ));
                // Charged before the copy is made: the bound holds memory too.
                self.charge(weight, line)?;
                self.insert(node, weight, 0)
            }
            _ => Ok(()),
        }
    }
}

/// Parse one YAML document (a leading byte order mark is skipped) as a Vale
/// style: more than one document, a syntax error or a duplicate key is an
/// error with its line, phrased for Vale.
pub fn parse(text: &str) -> Result<Node, YamlError> {
    parse_bounded(text, &Limits::STYLES).map_err(|mut e| {
        match e.kind {
            ErrorKind::Duplicate => e.message.push_str("; Vale refuses the file"),
            ErrorKind::Documents => e.message.push_str("; a Vale style is one"),
            _ => {}
        }
        e
    })
}

/// Parse one YAML document (a leading byte order mark is skipped) within
/// `limits`. The library's events are pulled one at a time (its own loader
/// recurses once per level of nesting, so a deep document could exhaust
/// the stack before any bound is asked); an empty document is an empty
/// plain scalar.
pub fn parse_bounded(text: &str, limits: &Limits) -> Result<Node, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut builder = Builder::new(*limits);
    let mut parser = Parser::new_from_str(text);
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| {
            error(
                e.marker().line().max(1),
                ErrorKind::Syntax,
                format!("not valid YAML: {}", e.info()),
            )
        })?;
        if ev == Event::StreamEnd {
            break;
        }
        builder.event(ev, mark.line().max(1))?;
        if builder.docs.len() > 1 {
            return Err(error(
                builder.docs[1].line,
                ErrorKind::Documents,
                "more than one YAML document".into(),
            ));
        }
    }
    Ok(builder.docs.pop().unwrap_or(Node {
        line: 1,
        value: Value::Scalar {
            text: String::new(),
            plain: true,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_markers_quotes_flows_and_escapes() {
        let doc = parse("\u{feff}---\n\"extends\": substitution # c\nswap: {a: b, 'c': \"\\u00e9\"}\nlist: [x, y]\n...\n").unwrap();
        assert_eq!(doc.get("extends").unwrap().as_str(), Some("substitution"));
        let swap = doc.get("swap").unwrap();
        assert_eq!(swap.line, 3);
        assert_eq!(swap.get("c").unwrap().as_str(), Some("é"));
        let anchors = parse("a: &x hello\nb: *x\n").unwrap();
        assert_eq!(anchors.get("b").unwrap().as_str(), Some("hello"));
        let block = parse("m: |\n  one\n  two\n").unwrap();
        assert_eq!(block.get("m").unwrap().as_str(), Some("one\ntwo\n"));
    }

    #[test]
    fn deep_nesting_and_alias_bombs_stop_at_the_bounds() {
        // The library's own loader recurses once per level: 100,000
        // levels would exhaust the stack before any bound was asked.
        let deep = format!("a:\n  {}x\n", "- ".repeat(100_000));
        let e = parse(&deep).unwrap_err();
        assert_eq!((e.line, e.kind), (2, ErrorKind::Bound), "{e}");
        assert!(e.message.contains("deeper than 128"), "{e}");
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let e = parse(&bomb).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Bound, "{e}");
        assert!(e.message.contains("an alias counts"), "{e}");
        // Aliases within the bounds still read.
        let small = parse("a: &x [1, 2]\nb: [*x, *x]\n").unwrap();
        assert!(matches!(&small.get("b").unwrap().value, Value::Sequence(v) if v.len() == 2));
    }

    #[test]
    fn tags_are_refused_only_when_the_limits_say_so() {
        assert_eq!(
            parse("a: !!str 1\n").unwrap().get("a").unwrap().as_str(),
            Some("1")
        );
        let strict = Limits {
            refuse_tags: true,
            ..Limits::STYLES
        };
        let e = parse_bounded("a: b\nc: !!str 1\n", &strict).unwrap_err();
        assert_eq!((e.line, e.kind), (2, ErrorKind::Tag), "{e}");
        assert!(e.message.contains("`!!str`"), "{e}");
    }

    #[test]
    fn errors_name_their_line() {
        let e = parse("a: b\nswap:\n  x: y\n  x: z\n").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("twice"), "{e}");
        let e = parse("a: \"open\nb: c\n").unwrap_err();
        assert!(e.message.contains("not valid YAML"), "{e}");
        let e = parse("a:\n\tb: c\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
    }
}
