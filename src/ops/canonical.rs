//! The records most of a long log holds (usage signals and check runs),
//! read from their canonical lines without serde's machinery: a cold read
//! of a million operations spent half its time in the JSON decoder.
//!
//! Only a line in the exact canonical form of one of these shapes is read
//! here: compact, keys sorted and each once, strings without escapes or
//! control characters, integers without sign, fraction, exponent or
//! leading zero, and only the fields below. On anything else [`record`]
//! says `None` and the caller decodes the line with serde, which reads
//! every valid line and names what is wrong with the others; so a line
//! decodes here to exactly what serde gives (a test holds the two to that
//! over random lines), and every record still passes the same checks
//! after (`Record::from_untrusted`).

use compact_str::CompactString;

use super::record::{
    Actor, ActorKind, CheckRun, FORMAT_VERSION, Kind, Record, Signal, SignalSource,
};

/// The record `line` holds, when it is a canonical line of the shapes
/// read here.
pub(super) fn record(line: &str) -> Option<Record> {
    // No escapes or control characters anywhere: each string then ends at
    // its next quote. (Control characters are counted without a branch
    // per byte.)
    let bytes = line.as_bytes();
    if memchr::memchr(b'\\', bytes).is_some()
        || bytes.iter().fold(0u8, |n, &b| n | u8::from(b < 0x20)) != 0
    {
        return None;
    }
    let mut c = Cursor {
        s: line,
        b: line.as_bytes(),
        at: 0,
    };
    let (mut actor, mut at, mut check, mut id, mut kind) = (None, None, None, None, None);
    let (mut project, mut signal, mut target, mut v) = (None, None, None, None);
    c.object(|c, key| {
        Some(match key {
            "actor" => {
                actor = Some(c.actor()?);
                0
            }
            "at" => {
                at = Some(c.compact()?);
                1
            }
            "check" => {
                check = Some(Box::new(c.check()?));
                2
            }
            "id" => {
                id = Some(c.compact()?);
                3
            }
            "kind" => {
                kind = Some(c.kind()?);
                4
            }
            "project" => {
                project = Some(c.compact()?);
                5
            }
            "signal" => {
                signal = Some(Box::new(c.signal()?));
                6
            }
            "target" => {
                target = Some(c.compact()?);
                7
            }
            "v" => {
                v = Some(u32::try_from(c.uint()?).ok()?);
                8
            }
            _ => return None,
        })
    })?;
    if c.at != c.b.len() {
        return None;
    }
    let v = v?;
    // The format version is checked by `validate` too; another version is
    // left to serde, which says which.
    if v != FORMAT_VERSION {
        return None;
    }
    Some(Record {
        v,
        id: id?,
        at: at?,
        target,
        signal,
        check,
        ..Record::new(project?, actor?, kind?)
    })
}

/// Where the first `"` at or after `from` is: eight bytes at a time, in a
/// word. Most strings of these lines are keys and ids shorter than 32
/// bytes, where setting up memchr's vector search cost more than the
/// search (a tenth of a cold read's instructions, 17 calls a record).
#[inline]
fn quote_from(b: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_le_bytes([b'"'; 8]);
    while let Some(&word) = b.get(at..).and_then(|rest| rest.first_chunk::<8>()) {
        // A byte of `x` is zero where the word holds a quote; the lowest
        // flagged byte is the first quote (a borrow only flags bytes above
        // a zero one).
        let x = u64::from_le_bytes(word) ^ QUOTES;
        let flags = x.wrapping_sub(ONES) & !x & HIGHS;
        if flags != 0 {
            return Some(at + (flags.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b.get(at..)?.iter().position(|&c| c == b'"').map(|p| at + p)
}

struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.b.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    /// An object whose keys come in strictly increasing order (so each
    /// once), each value read by `value`, which sees its key and answers
    /// the key's rank among those it reads (in their order: comparing
    /// ranks costs less than comparing the keys).
    fn object(&mut self, mut value: impl FnMut(&mut Self, &'a str) -> Option<u8>) -> Option<()> {
        self.eat(b'{')?;
        let mut last: Option<u8> = None;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            let rank = value(self, key)?;
            if last.is_some_and(|l| l >= rank) {
                return None;
            }
            last = Some(rank);
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    /// A string (the line holds no escapes or control characters, and
    /// quotes are ASCII: the text between two is the line's own UTF-8,
    /// checked whole).
    #[inline]
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let end = quote_from(self.b, start)?;
        self.at = end + 1;
        self.s.get(start..end)
    }

    fn compact(&mut self) -> Option<CompactString> {
        self.string().map(CompactString::from)
    }

    /// A non-negative integer as JSON writes it: no sign, fraction,
    /// exponent or leading zero.
    fn uint(&mut self) -> Option<u64> {
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        if digits == 0 || (digits > 1 && self.b[start] == b'0') {
            return None;
        }
        // A fraction or an exponent is for serde to read (or refuse).
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(n)
    }

    fn boolean(&mut self) -> Option<bool> {
        let rest = &self.b[self.at..];
        if rest.starts_with(b"true") {
            self.at += 4;
            Some(true)
        } else if rest.starts_with(b"false") {
            self.at += 5;
            Some(false)
        } else {
            None
        }
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        if self.eat(b']').is_some() {
            return Some(out);
        }
        loop {
            out.push(self.string()?.to_owned());
            if self.eat(b',').is_none() {
                self.eat(b']')?;
                return Some(out);
            }
        }
    }

    fn kind(&mut self) -> Option<Kind> {
        let text = self.string()?.strip_prefix("context.")?;
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    fn actor(&mut self) -> Option<Actor> {
        let (mut kind, mut name, mut session) = (None, None, None);
        self.object(|c, key| {
            Some(match key {
                "kind" => {
                    kind = Some(match c.string()? {
                        "person" => ActorKind::Person,
                        "agent" => ActorKind::Agent,
                        "tool" => ActorKind::Tool,
                        _ => return None,
                    });
                    0
                }
                "name" => {
                    name = Some(c.compact()?);
                    1
                }
                "session" => {
                    session = Some(c.compact()?);
                    2
                }
                _ => return None,
            })
        })?;
        Some(Actor {
            kind: kind?,
            name: name?,
            session,
        })
    }

    fn signal(&mut self) -> Option<Signal> {
        let (mut source, mut preferred, mut avoided) = (None, 0, 0);
        let (mut commit, mut pr, mut merger) = (None, None, None);
        self.object(|c, key| {
            Some(match key {
                "avoided" => {
                    avoided = c.uint()?;
                    0
                }
                "commit" => {
                    commit = Some(c.string()?.to_owned());
                    1
                }
                "merger" => {
                    merger = Some(c.string()?.to_owned());
                    2
                }
                "pr" => {
                    pr = Some(c.string()?.to_owned());
                    3
                }
                "preferred" => {
                    preferred = c.uint()?;
                    4
                }
                "source" => {
                    source = Some(match c.string()? {
                        "usage" => SignalSource::Usage,
                        "merge" => SignalSource::Merge,
                        "applied" => SignalSource::Applied,
                        _ => return None,
                    });
                    5
                }
                _ => return None,
            })
        })?;
        Some(Signal {
            source: source?,
            preferred,
            avoided,
            commit,
            pr,
            merger,
        })
    }

    /// A check run whose findings list is empty (a failing run is left to
    /// serde: it is rare).
    fn check(&mut self) -> Option<CheckRun> {
        let (mut clean, mut files, mut hook) = (None, Vec::new(), None);
        self.object(|c, key| {
            Some(match key {
                "clean" => {
                    clean = Some(c.boolean()?);
                    0
                }
                "failing" => {
                    c.eat(b'[')?;
                    c.eat(b']')?;
                    1
                }
                "files" => {
                    files = c.strings()?;
                    2
                }
                "hook" => {
                    hook = Some(c.string()?.to_owned());
                    3
                }
                _ => return None,
            })
        })?;
        Some(CheckRun {
            hook: hook?,
            files,
            failing: Vec::new(),
            clean: clean?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Lines of the shapes read here, and of others.
    const LINES: &[&str] = &[
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","signal":{"avoided":2,"preferred":12,"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"agent","name":"claude-code","session":"seed-3"},"at":"2026-12-01T10:00:00.001Z","check":{"clean":true,"failing":[],"files":["docs/page1.md","a b.md"],"hook":"stop"},"id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"merge"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"p","signal":{"avoided":0,"commit":"abc","merger":"ada","pr":"3","preferred":0,"source":"merge"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"person","name":"ada"},"at":"2026-12-01T10:00:00.001Z","check":{"clean":false,"files":[],"hook":"manual"},"id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"p","v":1}"#,
        // Read by serde only: escapes, other fields, findings, spaces,
        // keys out of order or twice, numbers JSON writes otherwise.
        r#"{"actor":{"kind":"tool","name":"ch\"eck"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","signal":{"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","note":"n","project":"bench","signal":{"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","check":{"clean":false,"failing":[{"path":"a","quote":"q","rule":"r"}],"files":["a"],"hook":"stop"},"id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","v":1}"#,
        r#"{"actor": {"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","check":{"clean":true,"hook":"stop"},"v":1}"#,
        r#"{"at":"2026-12-01T10:00:00.001Z","actor":{"kind":"tool","name":"check"},"id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","check":{"clean":true,"hook":"stop"},"v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","id":"0n79tw5k9s0000000000000c","kind":"context.signal","project":"bench","signal":{"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","signal":{"preferred":1.0,"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","signal":{"preferred":01,"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","signal":{"preferred":18446744073709551616,"source":"usage"},"target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","target":"0n79tw5k9s0000000000000b","v":2}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"signal","project":"bench","target":"0n79tw5k9s0000000000000b","v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.signal","project":"bench","target":"0n79tw5k9s0000000000000b","v":1} "#,
        r#"{"actor":{"kind":"robot","name":"check"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","check":{"clean":true,"hook":"stop"},"v":1}"#,
        r#"{"actor":{"kind":"tool"},"at":"2026-12-01T10:00:00.001Z","id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","check":{"clean":true,"hook":"stop"},"v":1}"#,
        r#"{"actor":{"kind":"tool","name":"check"},"at":"2026-12-01T10:00:00.001Z","check":{"clean":true,"hook":"stop","extra":1},"id":"0n79tw5k9s0000000000000a","kind":"context.check","project":"bench","v":1}"#,
        r#"{}"#,
        r#"{"v":1}"#,
    ];

    /// What serde reads of a line, for comparing.
    fn serde(line: &str) -> Option<Record> {
        serde_json::from_str(line).ok()
    }

    #[test]
    fn canonical_lines_of_these_shapes_read_as_serde_reads_them_and_no_others() {
        for (n, line) in LINES.iter().enumerate() {
            let fast = record(line);
            if n < 4 {
                assert!(fast.is_some(), "line {n} is read here");
            } else {
                assert!(fast.is_none(), "line {n} is left to serde");
            }
            if let Some(fast) = fast {
                assert_eq!(Some(&fast), serde(line).as_ref(), "line {n}");
                // (The fourth leaves out an empty list of findings.)
                if n < 3 {
                    assert_eq!(fast.to_canonical_json(), *line, "line {n} is canonical");
                }
            }
        }
    }

    proptest! {
        /// The quote found a word at a time is the first one, from any
        /// place, in any bytes (quotes beside and after others, bytes with
        /// the high bit set, a tail shorter than a word).
        #[test]
        fn the_first_quote_is_found_a_word_at_a_time(
            bytes in proptest::collection::vec(prop::sample::select(vec![b'"', b'a', 0x00, 0x21, 0x23, 0x80, 0xa2, 0xff]), 0..40),
            from in 0..48usize,
        ) {
            let naive = bytes
                .get(from..)
                .and_then(|rest| rest.iter().position(|&c| c == b'"'))
                .map(|p| from + p);
            prop_assert_eq!(quote_from(&bytes, from), naive);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whatever a line holds, what is read here is what serde reads.
        #[test]
        fn what_is_read_here_is_what_serde_reads(
            which in 0..LINES.len(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 0..4),
        ) {
            let mut bytes = LINES[which].as_bytes().to_vec();
            for (at, byte, how) in edits {
                let i = at.index(bytes.len() + 1);
                // Bytes JSON gives meaning to, and any other.
                let byte = b"{}[]\",:\\ 0123456789.e-aZ\x01"[usize::from(byte) % 25];
                match how {
                    0 if i < bytes.len() => bytes[i] = byte,
                    1 if i < bytes.len() => { bytes.remove(i); }
                    _ => bytes.insert(i.min(bytes.len()), byte),
                }
            }
            let Ok(line) = std::str::from_utf8(&bytes) else { return Ok(()) };
            if let Some(fast) = record(line) {
                prop_assert_eq!(Some(fast), serde(line));
            }
        }
    }
}
