//! YAML documents with line numbers, read by `yaml-rust2` (YAML 1.2: document
//! markers, quoted keys, flow collections, anchors and aliases, block
//! scalars, escapes). Vale reads its styles with a YAML library that refuses
//! a mapping holding the same key twice; so does this reader.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

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

/// Why a text is not a YAML document Vale would read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct YamlError {
    pub line: usize,
    pub message: String,
}

#[derive(Default)]
struct Builder {
    /// Open collections: the node, and for mappings the pending key.
    stack: Vec<(Node, Option<Node>, usize)>,
    anchors: std::collections::HashMap<usize, Node>,
    docs: Vec<Node>,
    error: Option<YamlError>,
}

impl Builder {
    fn insert(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let Some((parent, pending, _)) = self.stack.last_mut() else {
            self.docs.push(node);
            return;
        };
        match &mut parent.value {
            Value::Sequence(items) => items.push(node),
            Value::Mapping(pairs) => match pending.take() {
                None => *pending = Some(node),
                Some(key) => {
                    if let Some(text) = key.as_str()
                        && let Some((first, _)) =
                            pairs.iter().find(|(k, _)| k.as_str() == Some(text))
                        && self.error.is_none()
                    {
                        self.error = Some(YamlError {
                            line: key.line,
                            message: format!(
                                "the key {text:?} appears twice in one mapping (first on line {}); Vale refuses the file",
                                first.line
                            ),
                        });
                    }
                    pairs.push((key, node));
                }
            },
            Value::Scalar { .. } => {}
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line().max(1);
        match ev {
            Event::SequenceStart(anchor, _) => self.stack.push((
                Node {
                    line,
                    value: Value::Sequence(Vec::new()),
                },
                None,
                anchor,
            )),
            Event::MappingStart(anchor, _) => self.stack.push((
                Node {
                    line,
                    value: Value::Mapping(Vec::new()),
                },
                None,
                anchor,
            )),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, _, anchor)) = self.stack.pop() {
                    self.insert(node, anchor);
                }
            }
            Event::Scalar(text, style, anchor, _) => {
                let plain = style == TScalarStyle::Plain;
                self.insert(
                    Node {
                        line,
                        value: Value::Scalar { text, plain },
                    },
                    anchor,
                );
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().unwrap_or(Node {
                    line,
                    value: Value::Scalar {
                        text: String::new(),
                        plain: true,
                    },
                });
                self.insert(node, 0);
            }
            _ => {}
        }
    }
}

/// Parse one YAML document (a leading byte order mark is skipped). More than
/// one document, a syntax error or a duplicate key is an error with its line.
pub fn parse(text: &str) -> Result<Node, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut builder = Builder::default();
    Parser::new_from_str(text)
        .load(&mut builder, true)
        .map_err(|e| YamlError {
            line: e.marker().line().max(1),
            message: format!("not valid YAML: {}", e.info()),
        })?;
    if let Some(e) = builder.error {
        return Err(e);
    }
    match builder.docs.len() {
        0 => Ok(Node {
            line: 1,
            value: Value::Scalar {
                text: String::new(),
                plain: true,
            },
        }),
        1 => Ok(builder.docs.remove(0)),
        _ => Err(YamlError {
            line: builder.docs[1].line,
            message: "more than one YAML document; a Vale style is one".into(),
        }),
    }
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
