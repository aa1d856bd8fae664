//! The rules a matcher checks by: those held as given (the log's), then
//! those of term lists (`--rules terms.tsv`), each read from its line the
//! first time a check needs it.
//!
//! A term list's rules are all alike (found on word boundaries, in prose,
//! in any case but case-only variants, holding everywhere, with no
//! pattern) and a line is read alone, so a matcher whose plan was kept
//! ([`super::matcher::Plans`], keyed by the list's hash) needs no rule
//! of the list until a text holds one of its forms: a page checked by
//! 5,000 rules reads the few whose forms it writes, not 5,000 lines into
//! 25,000 strings. A list no kept plan was derived from is read whole
//! when it is loaded ([`TermList::parse`]), so its syntax errors are
//! reported, by line, before any check.

use std::ops::{Index, Range};
use std::sync::{Arc, OnceLock};

use super::packed::{U32s, le};
use super::rule::TermRule;
use crate::formats::{self, ImportedRule, ParseError, RuleStatus};
use crate::ops::record::Scope;
use crate::ops::{RuleId, Status};

/// A term list's rules, read line by line as they are first needed.
#[derive(Debug)]
pub struct TermList {
    /// The file's name: its rules' ids read `<name>:<line>`.
    name: String,
    /// Its text, read as UTF-8 when the list was read whole (a known
    /// list's text is not decoded again: a line is, when its rule is).
    text: Vec<u8>,
    hash: [u8; 32],
    /// Per rule, its line's number and byte range in `text`.
    lines: Lines,
    /// Each rule once read (boxed: 5,000 empty cells of a whole rule
    /// each cost a megabyte of memory touched).
    rules: Box<[OnceLock<Box<TermRule>>]>,
}

impl TermList {
    /// The largest list read (its offsets are kept as `u32`s).
    pub const MAX_BYTES: u64 = u32::MAX as u64;

    /// The BLAKE3 hash of a list's text: what a kept plan names it by.
    pub fn hash_of(text: &[u8]) -> [u8; 32] {
        blake3::hash(text).into()
    }

    /// The list in `text` (named `name`), every line read now: the first
    /// error, by line, when one is not a rule, a comment or blank.
    pub fn parse(name: String, text: String, hash: [u8; 32]) -> Result<TermList, ParseError> {
        let mut parsed = Vec::new();
        for (n, line) in formats::numbered(&text) {
            if let Some(rule) = formats::termlist::parse_term_line(n, line)? {
                parsed.push(rule);
            }
        }
        let mut list = Self::lines_of(name, text, hash);
        debug_assert_eq!(parsed.len(), list.lines.len());
        let rules = parsed
            .into_iter()
            .map(|rule| OnceLock::from(Box::new(list.term_rule(rule))))
            .collect();
        list.rules = rules;
        Ok(list)
    }

    /// The list in `text`, whose every line [`TermList::parse`] has read
    /// without error before (a kept plan names its hash), and whose rules'
    /// `lines` (each [`Lines::within`] the text) it found then: its rules
    /// are read as they are needed.
    pub fn known(name: String, text: Vec<u8>, hash: [u8; 32], lines: Lines) -> TermList {
        debug_assert!(lines.within(text.len()));
        let rules = (0..lines.len()).map(|_| OnceLock::new()).collect();
        TermList {
            name,
            text,
            hash,
            lines,
            rules,
        }
    }

    /// Its rules' lines, as [`TermList::known`] takes them back.
    pub fn lines(&self) -> &Lines {
        &self.lines
    }

    /// The list with its rules' lines found, none read: the lines
    /// [`formats::numbered`] gives that [`formats::termlist::holds_rule`]
    /// says hold one, found by searching for their ends (a line led by a
    /// byte from 0x80 on is asked of `holds_rule` itself).
    fn lines_of(name: String, text: String, hash: [u8; 32]) -> TermList {
        let bytes = text.as_bytes();
        let mut lines = Vec::new();
        // Offsets are kept as `u32`s: a list is read only up to
        // [`TermList::MAX_BYTES`].
        let at = |n: usize| u32::try_from(n).expect("a term list within 4 GiB");
        let mut start = 0;
        let mut n = 0;
        while start < bytes.len() {
            n += 1;
            let stop = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
            let mut end = stop;
            while end > start && bytes[end - 1] == b'\r' {
                end -= 1;
            }
            let line = &bytes[start..end];
            let holds = match line
                .iter()
                .find(|b| !b.is_ascii_whitespace() && **b != 0x0b)
            {
                None => false,
                Some(b'#') => false,
                Some(&b) if b < 0x80 => true,
                Some(_) => formats::termlist::holds_rule(&text[start..end]),
            };
            if holds {
                lines.extend([at(n), at(start), at(end)]);
            }
            start = stop + 1;
        }
        TermList {
            name,
            text: text.into_bytes(),
            hash,
            lines: Lines(lines.into()),
            rules: Box::default(),
        }
    }

    /// Rules held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The BLAKE3 hash of its text.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// Rule `i` (in the order of its lines), read on first need.
    pub fn rule(&self, i: usize) -> &TermRule {
        self.rules[i].get_or_init(|| {
            let (n, line) = self.lines.get(i);
            let parsed = self
                .text
                .get(line)
                .and_then(|line| std::str::from_utf8(line).ok())
                .and_then(|line| formats::termlist::parse_term_line(n, line).ok())
                .flatten()
                // A list is known only once every line of this very text
                // has been read without error ([`TermList::known`]).
                .expect("a line of a term list read whole before reads alone");
            Box::new(self.term_rule(parsed))
        })
    }

    fn term_rule(&self, r: ImportedRule) -> TermRule {
        TermRule {
            id: RuleId::File(self.name.clone(), r.line),
            preferred: r.preferred,
            avoided: r.avoided,
            status: match r.status {
                RuleStatus::Suggested => Status::Suggested,
                RuleStatus::Contested => Status::Contested,
                RuleStatus::Established | RuleStatus::Advisory => Status::Established,
            },
            suggested: matches!(r.status, RuleStatus::Suggested | RuleStatus::Contested),
            advisory: r.status == RuleStatus::Advisory,
            exact: r.exact,
            pattern: r.pattern,
            bounds: r.bounds,
            raw: r.raw,
            level: None,
            paths: Vec::new(),
            scope: Scope::default(),
        }
    }

    /// Every rule, read now.
    pub fn rules(&self) -> Vec<TermRule> {
        (0..self.len()).map(|i| self.rule(i).clone()).collect()
    }
}

/// Per rule of a term list, its line's number and where the line lies in
/// the text: three `u32`s, found when the list is read whole
/// ([`TermList::parse`]), or kept with a plan derived from it and read
/// back where they lie ([`Lines::read`]), so a list known before is not
/// searched for its lines again (5,000 rules: half a megabyte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines(U32s);

impl Lines {
    /// Lines held.
    fn len(&self) -> usize {
        self.0.len() / 3
    }

    /// Line `i`'s number and where it lies.
    fn get(&self, i: usize) -> (usize, Range<usize>) {
        let w = &self.0.words()[3 * i..3 * i + 3];
        let at = |k: usize| le(&w[k]) as usize;
        (at(0), at(1)..at(2))
    }

    /// Whether every line lies within a text of `len` bytes. (Folded
    /// without an early exit, so that it runs on vectors.)
    pub fn within(&self, len: usize) -> bool {
        let (triples, _) = self.0.words().as_chunks::<3>();
        triples.len() * 3 == self.0.len()
            && triples.iter().fold(true, |ok, [_, start, end]| {
                ok & (le(start) <= le(end)) & (le(end) as usize <= len)
            })
    }

    /// The lines as [`Lines::read`] reads them back.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The lines [`Lines::as_bytes`] gave, at `range` of `all`, where they
    /// lie: `None` when they are not whole lines. (Whether they lie within
    /// their list's text, [`TermList::known`] asks.)
    pub fn read(all: &Arc<Vec<u8>>, range: Range<usize>) -> Option<Lines> {
        U32s::read_at(all, range)
            .filter(|u| u.len() % 3 == 0)
            .map(Lines)
    }
}

/// The rules held as given, then those of each term list: indexed as one
/// list, a term list's rule read when it is first indexed. Cloning shares
/// everything.
#[derive(Debug, Clone)]
pub struct RuleTable {
    held: Arc<[TermRule]>,
    lists: Arc<[Arc<TermList>]>,
    len: usize,
    /// Every rule in one slice, made when something asks for them all.
    whole: Arc<OnceLock<Arc<[TermRule]>>>,
}

impl RuleTable {
    pub fn new(held: impl Into<Arc<[TermRule]>>, lists: Vec<Arc<TermList>>) -> RuleTable {
        let held = held.into();
        let len = held.len() + lists.iter().map(|l| l.len()).sum::<usize>();
        RuleTable {
            held,
            lists: lists.into(),
            len,
            whole: Arc::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rules held as given (they come first).
    pub fn held(&self) -> &[TermRule] {
        &self.held
    }

    pub fn lists(&self) -> &[Arc<TermList>] {
        &self.lists
    }

    /// Every rule, each term list read whole.
    pub fn all(&self) -> &[TermRule] {
        if self.lists.is_empty() {
            return &self.held;
        }
        self.whole.get_or_init(|| {
            let mut all = self.held.to_vec();
            for list in self.lists.iter() {
                all.extend(list.rules());
            }
            all.into()
        })
    }

    /// Each rule's group: the rules of one imported file or term list (ids
    /// `<import>:<n>`, `<name>:<line>`) form one, as the rules of one Vale
    /// style form one expression; every other rule is its own.
    pub fn groups(&self) -> Vec<u32> {
        let mut ids: std::collections::HashMap<&str, u32, foldhash::fast::RandomState> =
            Default::default();
        let mut out = Vec::with_capacity(self.len);
        for r in self.held.iter() {
            let g = match &r.id {
                RuleId::Op(op) | RuleId::Imported(op, _) => op.as_str(),
                RuleId::File(name, _) => name.as_str(),
            };
            let n = ids.len() as u32;
            out.push(*ids.entry(g).or_insert(n));
        }
        for list in self.lists.iter() {
            let n = ids.len() as u32;
            let g = *ids.entry(list.name()).or_insert(n);
            out.extend(std::iter::repeat_n(g, list.len()));
        }
        out
    }
}

impl Index<usize> for RuleTable {
    type Output = TermRule;

    fn index(&self, i: usize) -> &TermRule {
        if i < self.held.len() {
            return &self.held[i];
        }
        let mut j = i - self.held.len();
        for list in self.lists.iter() {
            if j < list.len() {
                return list.rule(j);
            }
            j -= list.len();
        }
        panic!("rule {i} of {}", self.len)
    }
}

/// Two tables are equal when they hold equal rules and the same lists
/// (by name and text).
impl PartialEq for RuleTable {
    fn eq(&self, other: &Self) -> bool {
        self.held == other.held
            && self.lists.len() == other.lists.len()
            && self
                .lists
                .iter()
                .zip(other.lists.iter())
                .all(|(a, b)| a.name == b.name && a.hash == b.hash)
    }
}

impl From<Vec<TermRule>> for RuleTable {
    fn from(rules: Vec<TermRule>) -> Self {
        RuleTable::new(rules, Vec::new())
    }
}

impl From<Arc<[TermRule]>> for RuleTable {
    fn from(rules: Arc<[TermRule]>) -> Self {
        RuleTable::new(rules, Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines the plain reading finds: [`formats::numbered`] and
    /// [`formats::termlist::holds_rule`].
    fn plain(text: &str) -> Vec<(usize, usize, usize)> {
        let base = text.as_ptr() as usize;
        formats::numbered(text)
            .filter(|(_, l)| formats::termlist::holds_rule(l))
            .map(|(n, l)| {
                let start = l.as_ptr() as usize - base;
                (n, start, start + l.len())
            })
            .collect()
    }

    fn found(text: &str) -> Vec<(usize, usize, usize)> {
        let lines = TermList::lines_of("t".into(), text.into(), [0; 32]).lines;
        (0..lines.len())
            .map(|i| {
                let (n, at) = lines.get(i);
                (n, at.start, at.end)
            })
            .collect()
    }

    #[test]
    fn a_known_list_finds_the_lines_a_plain_reading_finds() {
        for text in [
            "",
            "\n",
            "a\tb",
            "# c\n\n  \t\n1\te\tA\tb\n",
            "1\te\tA\tb\r\n2\te\tB\tc\r\r\n\r\n",
            "\u{a0}# nbsp then a comment\n\u{a0}x\n\u{85}\n\u{2003}\n",
            "\x0b\x0c#\n \x0bx\n\u{feff}x\n",
            "last line without an end",
        ] {
            assert_eq!(found(text), plain(text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_finds_the_same_lines(text in "(?s)[a#\t \r\n\x0b\x0c\u{a0}\u{85}\u{2003}]{0,60}") {
            proptest::prop_assert_eq!(found(&text), plain(&text));
        }
    }
}
