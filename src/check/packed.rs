//! A matcher's tables in a few flat arrays: its patterns in one string, its
//! forms in one list, a selector's words in one string. A plan read back
//! from `.git/kapi/rules.cache` is then some copies of arrays, not an
//! allocation per form (5,000 rules: some 13,000 patterns and 15,000
//! forms), and reading and writing them is one loop each.
//!
//! [`Writer`] and [`Reader`] are the binary form: little-endian `u32`s,
//! each array after its length. A reader checks every length against the
//! bytes left before it allocates, and the tables' own checks
//! ([`Keys::read`], [`Entries::read`]) that every offset and index stays
//! in range, so bytes it did not write are refused, never trusted.

/// Strings in one buffer: string `k` is `text[at[k]..at[k + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Keys {
    text: String,
    at: Vec<u32>,
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            text: String::new(),
            at: vec![0],
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

    pub(super) fn get(&self, k: usize) -> &str {
        &self.text[self.at[k] as usize..self.at[k + 1] as usize]
    }

    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        self.at
            .windows(2)
            .map(|w| &self.text[w[0] as usize..w[1] as usize])
    }

    /// Add `s` (the strings stay within 4 GiB: a plan's keys are bounded
    /// far below, by `select::SELECT_MAX_BYTES` or the rules' own size).
    pub(super) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.at
            .push(u32::try_from(self.text.len()).expect("keys within 4 GiB"));
    }

    #[cfg(test)]
    pub(super) fn pop(&mut self) {
        if self.at.len() > 1 {
            self.at.pop();
            self.text.truncate(*self.at.last().unwrap() as usize);
        }
    }

    pub(super) fn write(&self, w: &mut Writer) {
        w.bytes(self.text.as_bytes());
        w.u32s(&self.at);
    }

    pub(super) fn read(r: &mut Reader) -> Option<Keys> {
        let text = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        let at = r.u32s()?;
        let ok = at.first() == Some(&0)
            && at.last().is_some_and(|&e| e as usize == text.len())
            && at.windows(2).all(|w| w[0] <= w[1])
            && at.iter().all(|&a| text.is_char_boundary(a as usize));
        ok.then_some(Keys { text, at })
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
/// list of entries, so the plan reads them back as copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entries {
    rules: Vec<u32>,
    flags: Vec<u8>,
    form_at: Vec<u32>,
    at: Vec<u32>,
    /// The texts of the forms matched as written.
    forms: String,
}

impl Default for Entries {
    fn default() -> Self {
        Entries {
            rules: Vec::new(),
            flags: Vec::new(),
            form_at: vec![0],
            at: vec![0],
            forms: String::new(),
        }
    }
}

impl Entries {
    fn entry(&self, i: usize) -> Entry {
        let flags = self.flags[i];
        Entry {
            rule: self.rules[i],
            exact: flags & 1 != 0,
            preferred: flags & 2 != 0,
            form: (self.form_at[i], self.form_at[i + 1]),
        }
    }

    /// The forms of pattern `k`.
    pub(super) fn of(&self, k: usize) -> impl Iterator<Item = Entry> + '_ {
        (self.at[k] as usize..self.at[k + 1] as usize).map(|i| self.entry(i))
    }

    /// How many forms pattern `k` stands for.
    pub(super) fn count(&self, k: usize) -> usize {
        (self.at[k + 1] - self.at[k]) as usize
    }

    /// Patterns held.
    pub(super) fn len(&self) -> usize {
        self.at.len() - 1
    }

    /// Every form of every pattern.
    pub(super) fn all(&self) -> impl Iterator<Item = Entry> + '_ {
        (0..self.rules.len()).map(|i| self.entry(i))
    }

    /// The text of `entry`, as written (empty for a form matched in any
    /// case: nothing reads it).
    pub(super) fn form(&self, entry: &Entry) -> &str {
        &self.forms[entry.form.0 as usize..entry.form.1 as usize]
    }

    /// Add the next pattern's forms: (rule, exact, preferred, text).
    pub(super) fn push<'a>(&mut self, forms: impl IntoIterator<Item = (u32, bool, bool, &'a str)>) {
        for (rule, exact, preferred, text) in forms {
            if exact {
                self.forms.push_str(text);
            }
            self.rules.push(rule);
            self.flags
                .push(u8::from(exact) | (u8::from(preferred) << 1));
            self.form_at
                .push(u32::try_from(self.forms.len()).expect("forms within 4 GiB"));
        }
        self.at
            .push(u32::try_from(self.rules.len()).expect("forms within 4 GiB"));
    }

    #[cfg(test)]
    pub(super) fn set_rule(&mut self, i: usize, rule: u32) {
        self.rules[i] = rule;
    }

    pub(super) fn write(&self, w: &mut Writer) {
        w.bytes(self.forms.as_bytes());
        w.u32s(&self.at);
        w.u32s(&self.rules);
        w.bytes(&self.flags);
        w.u32s(&self.form_at);
    }

    /// The forms [`Entries::write`] wrote, every offset in range: the
    /// patterns' and the texts' rising, each text on character boundaries
    /// and only a form matched as written with one.
    pub(super) fn read(r: &mut Reader) -> Option<Entries> {
        let e = Entries {
            forms: String::from_utf8(r.bytes()?.to_vec()).ok()?,
            at: r.u32s()?,
            rules: r.u32s()?,
            flags: r.bytes()?.to_vec(),
            form_at: r.u32s()?,
        };
        let n = e.rules.len();
        let ok = e.flags.len() == n
            && e.flags.iter().all(|&f| f <= 3)
            && e.at.first() == Some(&0)
            && e.at.last().is_some_and(|&a| a as usize == n)
            && e.at.windows(2).all(|w| w[0] <= w[1])
            && e.form_at.len() == n + 1
            && e.form_at[0] == 0
            && e.form_at[n] as usize == e.forms.len()
            && e.form_at.windows(2).zip(&e.flags).all(|(w, &f)| {
                w[0] == w[1]
                    || (f & 1 != 0 && w[0] < w[1] && e.forms.is_char_boundary(w[1] as usize))
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

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.u32(u32::try_from(b.len()).expect("a table within 4 GiB"));
        self.out.extend_from_slice(b);
    }

    pub(super) fn u32s(&mut self, v: &[u32]) {
        self.u32(u32::try_from(v.len()).expect("a table within 4 GiB"));
        for n in v {
            self.out.extend_from_slice(&n.to_le_bytes());
        }
    }

    pub(super) fn u64s(&mut self, v: &[u64]) {
        self.u32(u32::try_from(v.len()).expect("a table within 4 GiB"));
        for n in v {
            self.out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// The binary form's reader: `None` for bytes cut short or a length past
/// the bytes left.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    /// A count of items of at least `size` bytes each, refused when the
    /// bytes left cannot hold them.
    pub(super) fn count(&mut self, size: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(size)? <= self.0.len()).then_some(n)
    }

    pub(super) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.count(1)?;
        self.take(n)
    }

    pub(super) fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.count(4)?;
        let (words, _) = self.take(n * 4)?.as_chunks::<4>();
        Some(words.iter().map(|&w| u32::from_le_bytes(w)).collect())
    }

    pub(super) fn u64s(&mut self) -> Option<Vec<u64>> {
        let n = self.count(8)?;
        let (words, _) = self.take(n * 8)?.as_chunks::<8>();
        Some(words.iter().map(|&w| u64::from_le_bytes(w)).collect())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
