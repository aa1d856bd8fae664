//! A matcher's tables in a few flat arrays: its patterns in one string, its
//! forms in one list, a selector's words in one string. A plan read back
//! from `.git/kapi/rules.cache` is then those arrays where they lie in the
//! bytes read, not copied and not an allocation per form (5,000 rules:
//! some 13,000 patterns and 15,000 forms), and writing them is a copy
//! each.
//!
//! [`Writer`] and [`Reader`] are the binary form: little-endian `u32`s,
//! each array after its length. A table holds its arrays in that form
//! ([`Buf`], [`U32s`]) whether it was built here or read back, so reading
//! is checking, not converting. A reader checks every length against the
//! bytes left, and the tables' own checks ([`Keys::read`],
//! [`Entries::read`]) that every offset and index stays in range, so bytes
//! it did not write are refused, never trusted. Texts are compared as
//! bytes and never taken for UTF-8, so a text read back is not decoded.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// The bytes of one array: built here, or lying in bytes read back
/// ([`Reader`]), which every table read from them shares.
#[derive(Clone)]
pub(super) enum Buf {
    Built(Vec<u8>),
    Read(Arc<Vec<u8>>, Range<usize>),
}

impl Default for Buf {
    fn default() -> Self {
        Buf::Built(Vec::new())
    }
}

impl Deref for Buf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Buf::Built(bytes) => bytes,
            Buf::Read(all, at) => &all[at.clone()],
        }
    }
}

impl PartialEq for Buf {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Buf {}

impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

impl Buf {
    /// The bytes to add to (copied first when they were read).
    fn built(&mut self) -> &mut Vec<u8> {
        if let Buf::Read(..) = self {
            *self = Buf::Built(self.to_vec());
        }
        match self {
            Buf::Built(bytes) => bytes,
            Buf::Read(..) => unreachable!("made a built copy above"),
        }
    }
}

/// A little-endian `u32` as an array holds it.
#[inline(always)]
pub(super) fn le(word: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*word)
}

/// An array of `u32`s, little-endian ([`le`]), as it is written.
#[derive(Clone, Default, PartialEq, Eq)]
pub(super) struct U32s(Buf);

impl U32s {
    pub(super) fn len(&self) -> usize {
        self.0.len() / 4
    }

    /// The numbers, each as four bytes ([`le`] reads one).
    #[inline]
    pub(super) fn words(&self) -> &[[u8; 4]] {
        self.0.as_chunks::<4>().0
    }

    #[inline]
    pub(super) fn get(&self, i: usize) -> u32 {
        le(&self.words()[i])
    }

    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = u32> + Clone + '_ {
        self.words().iter().map(le)
    }

    pub(super) fn push(&mut self, n: u32) {
        self.0.built().extend_from_slice(&n.to_le_bytes());
    }

    /// Each number with the next.
    fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let w = self.words();
        w.iter()
            .zip(w.get(1..).unwrap_or_default())
            .map(|(a, b)| (le(a), le(b)))
    }

    /// Whether the numbers never fall (`strictly`: always rise). Folded
    /// without an early exit, as [`U32s::below`], so that it runs on
    /// vectors: a plan's arrays are checked every time one is read.
    pub(super) fn rising(&self, strictly: bool) -> bool {
        self.pairs()
            .fold(true, |ok, (a, b)| ok & (a < b || (!strictly && a == b)))
    }

    /// Whether these are the offsets of items in something `of` long:
    /// the first 0, the last `of`, never falling.
    pub(super) fn offsets(&self, of: usize) -> bool {
        self.len() > 0
            && self.get(0) == 0
            && self.get(self.len() - 1) as usize == of
            && self.rising(false)
    }

    /// Whether every number is below `bound`.
    pub(super) fn below(&self, bound: usize) -> bool {
        self.len() == 0 || (self.iter().fold(0, u32::max) as usize) < bound
    }

    /// The `u32`s at `range` of `all`, where they lie: `None` when the
    /// range is not within `all` or not of whole `u32`s.
    pub(super) fn read_at(all: &Arc<Vec<u8>>, range: Range<usize>) -> Option<U32s> {
        let whole =
            range.start <= range.end && range.end <= all.len() && range.len().is_multiple_of(4);
        whole.then(|| U32s(Buf::Read(Arc::clone(all), range)))
    }

    /// The numbers as written: little-endian, four bytes each.
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    #[cfg(test)]
    pub(super) fn set(&mut self, i: usize, n: u32) {
        self.0.built()[4 * i..4 * i + 4].copy_from_slice(&n.to_le_bytes());
    }
}

impl From<Vec<u32>> for U32s {
    fn from(numbers: Vec<u32>) -> Self {
        U32s(Buf::Built(
            numbers.iter().flat_map(|n| n.to_le_bytes()).collect(),
        ))
    }
}

impl fmt::Debug for U32s {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Strings in one buffer: string `k` is `text[at[k]..at[k + 1]]`, as
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Keys {
    text: Buf,
    at: U32s,
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            text: Buf::default(),
            at: vec![0].into(),
        }
    }
}

impl Keys {
    pub(super) fn len(&self) -> usize {
        self.at.len() - 1
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of every string.
    pub(super) fn bytes(&self) -> usize {
        self.text.len()
    }

    #[inline]
    pub(super) fn get(&self, k: usize) -> &[u8] {
        let at = self.at.words();
        &self.text[le(&at[k]) as usize..le(&at[k + 1]) as usize]
    }

    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        let text = &*self.text;
        self.at
            .words()
            .windows(2)
            .map(move |w| &text[le(&w[0]) as usize..le(&w[1]) as usize])
    }

    /// Add `s` (the strings stay within 4 GiB: a plan's keys are bounded
    /// far below, by `select::SELECT_MAX_BYTES` or the rules' own size).
    pub(super) fn push(&mut self, s: &[u8]) {
        let text = self.text.built();
        text.extend_from_slice(s);
        let end = u32::try_from(text.len()).expect("keys within 4 GiB");
        self.at.push(end);
    }

    #[cfg(test)]
    pub(super) fn pop(&mut self) {
        if !self.is_empty() {
            let words = self.at.0.built();
            words.truncate(words.len() - 4);
            let end = self.at.get(self.len()) as usize;
            self.text.built().truncate(end);
        }
    }

    pub(super) fn write(&self, w: &mut Writer) {
        w.bytes(&self.text);
        w.u32s(&self.at);
    }

    pub(super) fn read(r: &mut Reader) -> Option<Keys> {
        let keys = Keys {
            text: r.bytes()?,
            at: r.u32s()?,
        };
        keys.at.offsets(keys.text.len()).then_some(keys)
    }
}

/// One form a pattern stands for: its rule, whether it is matched only as
/// written (then its text, in [`Entries`]' buffer, is kept) and whether it
/// is the rule's preferred form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) rule: u32,
    pub(super) exact: bool,
    pub(super) preferred: bool,
    form: (u32, u32),
}

/// Per pattern, its forms (pattern `k`'s are the `at[k]..at[k + 1]`th),
/// each in three arrays: its rule, its flags (1: matched as written, 2:
/// preferred), and where its text begins in `forms` (it ends where the
/// next begins; only a form matched as written has one). Arrays, not a
/// list of entries, so the plan reads them back where they lie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entries {
    rules: U32s,
    flags: Buf,
    form_at: U32s,
    at: U32s,
    /// The texts of the forms matched as written.
    forms: Buf,
}

impl Default for Entries {
    fn default() -> Self {
        Entries {
            rules: U32s::default(),
            flags: Buf::default(),
            form_at: vec![0].into(),
            at: vec![0].into(),
            forms: Buf::default(),
        }
    }
}

impl Entries {
    fn entry(&self, i: usize) -> Entry {
        let flags = self.flags[i];
        Entry {
            rule: self.rules.get(i),
            exact: flags & 1 != 0,
            preferred: flags & 2 != 0,
            form: (self.form_at.get(i), self.form_at.get(i + 1)),
        }
    }

    /// The forms of pattern `k`.
    pub(super) fn of(&self, k: usize) -> impl Iterator<Item = Entry> + '_ {
        (self.at.get(k) as usize..self.at.get(k + 1) as usize).map(|i| self.entry(i))
    }

    /// Patterns held.
    pub(super) fn len(&self) -> usize {
        self.at.len() - 1
    }

    /// Whether every pattern stands for a form, and every form for a rule
    /// below `rules`.
    pub(super) fn fit(&self, rules: usize) -> bool {
        self.at.rising(true) && self.rules.below(rules)
    }

    /// Every form of every pattern.
    #[cfg(test)]
    pub(super) fn all(&self) -> impl Iterator<Item = Entry> + '_ {
        (0..self.rules.len()).map(|i| self.entry(i))
    }

    /// The text of `entry`, as written (empty for a form matched in any
    /// case: nothing reads it).
    pub(super) fn form(&self, entry: &Entry) -> &[u8] {
        &self.forms[entry.form.0 as usize..entry.form.1 as usize]
    }

    /// Add the next pattern's forms: (rule, exact, preferred, text).
    pub(super) fn push<'a>(&mut self, forms: impl IntoIterator<Item = (u32, bool, bool, &'a str)>) {
        for (rule, exact, preferred, text) in forms {
            let texts = self.forms.built();
            if exact {
                texts.extend_from_slice(text.as_bytes());
            }
            let end = u32::try_from(texts.len()).expect("forms within 4 GiB");
            self.rules.push(rule);
            self.flags
                .built()
                .push(u8::from(exact) | (u8::from(preferred) << 1));
            self.form_at.push(end);
        }
        let n = u32::try_from(self.rules.len()).expect("forms within 4 GiB");
        self.at.push(n);
    }

    #[cfg(test)]
    pub(super) fn set_rule(&mut self, i: usize, rule: u32) {
        self.rules.set(i, rule);
    }

    pub(super) fn write(&self, w: &mut Writer) {
        w.bytes(&self.forms);
        w.u32s(&self.at);
        w.u32s(&self.rules);
        w.bytes(&self.flags);
        w.u32s(&self.form_at);
    }

    /// The forms [`Entries::write`] wrote, every offset in range: the
    /// patterns' and the texts' rising, and only a form matched as
    /// written with a text.
    pub(super) fn read(r: &mut Reader) -> Option<Entries> {
        let e = Entries {
            forms: r.bytes()?,
            at: r.u32s()?,
            rules: r.u32s()?,
            flags: r.bytes()?,
            form_at: r.u32s()?,
        };
        let n = e.rules.len();
        let ok = e.flags.len() == n
            && e.at.offsets(n)
            && e.form_at.len() == n + 1
            && e.form_at.offsets(e.forms.len())
            && e.form_at
                .pairs()
                .zip(e.flags.iter())
                .fold(true, |ok, ((a, b), &f)| {
                    ok & (f <= 3) & ((a == b) | (f & 1 != 0))
                });
        ok.then_some(e)
    }
}

/// The binary form's writer.
#[derive(Default)]
pub(super) struct Writer {
    pub(super) out: Vec<u8>,
}

impl Writer {
    pub(super) fn u32(&mut self, n: u32) {
        self.out.extend_from_slice(&n.to_le_bytes());
    }

    pub(super) fn u8(&mut self, n: u8) {
        self.out.push(n);
    }

    /// Bytes after their count (of `size`-byte items).
    fn counted(&mut self, b: &[u8], size: usize) {
        self.u32(u32::try_from(b.len() / size).expect("a table within 4 GiB"));
        self.out.extend_from_slice(b);
    }

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.counted(b, 1);
    }

    pub(super) fn u32s(&mut self, v: &U32s) {
        self.counted(&v.0, 4);
    }
}

/// The binary form's reader over `all[at..end]`: `None` for bytes cut
/// short or a length past the bytes left. What it reads lies in `all`,
/// shared, not copied.
pub(super) struct Reader<'a> {
    all: &'a Arc<Vec<u8>>,
    at: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    /// A reader of `all[range]`, when the range is within it.
    pub(super) fn new(all: &'a Arc<Vec<u8>>, range: Range<usize>) -> Option<Self> {
        (range.start <= range.end && range.end <= all.len()).then_some(Reader {
            all,
            at: range.start,
            end: range.end,
        })
    }

    fn take(&mut self, n: usize) -> Option<Range<usize>> {
        let to = self.at.checked_add(n).filter(|&to| to <= self.end)?;
        Some(std::mem::replace(&mut self.at, to)..to)
    }

    fn shared(&mut self, n: usize) -> Option<Buf> {
        Some(Buf::Read(Arc::clone(self.all), self.take(n)?))
    }

    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(self.all[self.take(1)?][0])
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.all[self.take(4)?].try_into().ok()?))
    }

    /// A count of items of `size` bytes each, refused when the bytes left
    /// cannot hold them.
    fn count(&mut self, size: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(size)? <= self.end - self.at).then_some(n)
    }

    pub(super) fn bytes(&mut self) -> Option<Buf> {
        let n = self.count(1)?;
        self.shared(n)
    }

    pub(super) fn u32s(&mut self) -> Option<U32s> {
        let n = self.count(4)?;
        Some(U32s(self.shared(n * 4)?))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.at == self.end
    }
}
