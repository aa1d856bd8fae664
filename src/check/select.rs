//! Scanning a text with only the forms it can hold: a large rule set's
//! automaton (5,000 rules: some 25,000 folded forms) costs far more to
//! build than a page costs to scan, and a page can only hold the forms
//! whose words it writes.
//!
//! A form is found on word boundaries (`Bounds::Words` or `Bounds::Regex`:
//! a word character never stands on both sides of either end), so every
//! word of a form found in a text is a whole word of that text: its inner
//! words are set off by the form's own characters, its first and last by
//! the boundaries. So a form whose words are not all words of the text
//! cannot be found there, and an automaton over the other forms finds,
//! in that text, every occurrence that could stand: the same hits as one
//! over every form (occurrences of forms it leaves out would all have been
//! dropped for their boundaries). Forms of a rule matched anywhere
//! (`Bounds::None`) and forms without words are kept for every text.
//!
//! The words of a text are looked up in a table of the forms' words, and
//! each form is indexed under its word that the fewest rules share (so
//! few forms are tried per word of the text); the forms under the text's
//! words whose other words the text writes too are its candidates. One
//! automaton serves many texts (a check of a tree): the
//! union of the candidates seen so far, rebuilt when it grows by an eighth
//! (a text with candidates it lacks scans meanwhile with it and with an
//! automaton of its own over those alone), so rebuilds cost at most nine
//! times the final union's build; past half
//! of every form, the automaton over them all is built once instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::matcher::{Automaton, MatcherError, is_word};
use super::packed::{Keys, Reader, U32s, Writer, le};

/// Build the selector rather than one automaton from this many folded
/// forms: below it the whole automaton costs less than a few milliseconds.
pub(super) const SELECT_FROM: usize = 2048;

/// A selector's keys at most: any automaton over some of them stays far
/// below what aho-corasick can build (state and pattern ids up to 2^31),
/// so its builds cannot fail. A larger rule set builds its one automaton
/// at once, and reports that failure.
pub(super) const SELECT_MAX_BYTES: usize = 64 * 1024 * 1024;

/// What a selector looks a text's words up in, derived from the forms
/// alone: kept with the plan in `.git/kapi/rules.cache`, so a check by a
/// large rule set does not build it again ([`Tables::write`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tables {
    /// Every distinct word of the forms; its number is its place.
    words: Keys,
    /// The words by [`word_hash`], open addressing: a word's number plus
    /// one, 0 for an empty slot; a power of two long, at least twice the
    /// words, so a probe always ends.
    slots: U32s,
    /// The [`slot_of`]s of those words: a text's word in none of them is not
    /// looked up (most are not).
    filter: U32s,
    /// Per word `w`, the forms indexed under it: `by_word[by_word_at[w]..
    /// by_word_at[w + 1]]` (two arrays, not an allocation per word).
    by_word: U32s,
    by_word_at: U32s,
    /// Per form, its words (numbers) between `needs_at[k]` and
    /// `needs_at[k + 1]`: all must be words of a text that holds it.
    needs: U32s,
    needs_at: U32s,
    /// Forms every text is scanned for.
    always: U32s,
}

impl Tables {
    /// The tables of `keys` (folded forms); `anywhere(k)`: a rule of form
    /// `k` matches it inside words too (`Bounds::None`); `rules(k)`: the
    /// rules form `k` stands for.
    pub(super) fn new<R: IntoIterator<Item = u32>>(
        keys: &[String],
        anywhere: impl Fn(usize) -> bool,
        rules: impl Fn(usize) -> R,
    ) -> Tables {
        let mut table: HashMap<&str, u32, foldhash::fast::RandomState> = HashMap::default();
        let mut words = Keys::default();
        let mut needs = Vec::new();
        let mut needs_at = Vec::with_capacity(keys.len() + 1);
        let mut counts: Vec<u32> = Vec::new();
        // Each word with each rule that has a form writing it.
        let mut ruled: std::collections::HashSet<(u32, u32), foldhash::fast::RandomState> =
            Default::default();
        let mut always = Vec::new();
        needs_at.push(0);
        for (k, key) in keys.iter().enumerate() {
            let from = needs.len();
            if !anywhere(k) {
                for_words(key, |word| {
                    let w = *table.entry(word).or_insert_with(|| {
                        words.push(word.as_bytes());
                        counts.push(0);
                        words.len() as u32 - 1
                    });
                    // A word a form writes twice is needed twice: no
                    // search for it (a form may hold thousands of words).
                    needs.push(w);
                    counts[w as usize] += 1;
                });
                for &w in &needs[from..] {
                    for r in rules(k) {
                        ruled.insert((w, r));
                    }
                }
            }
            if needs.len() == from {
                always.push(k as u32);
            }
            needs_at.push(needs.len() as u32);
        }
        let mut filter = vec![0u32; FILTER_BITS / 32];
        let mut slots = vec![0u32; (words.len() * 2).next_power_of_two().max(2)];
        let mask = slots.len() - 1;
        for (w, word) in words.iter().enumerate() {
            let s = slot_of(word);
            filter[s / 32] |= 1 << (s % 32);
            let mut i = word_hash(word) as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = w as u32 + 1;
        }
        // Each form under its rarest word: the word the fewest rules write
        // (then the fewest forms). By rules, not forms: a rule listing four
        // spellings of "GitHub" does not make "github" four times as common
        // in a text, and a word many rules share (a product's name in
        // each of its variants) is one most pages would write.
        let mut by_rules = vec![0u32; words.len()];
        for &(w, _) in &ruled {
            by_rules[w as usize] += 1;
        }
        let mut under: Vec<u32> = Vec::with_capacity(keys.len());
        let mut by_word_at = vec![0u32; words.len() + 1];
        for k in 0..keys.len() {
            let own = &needs[needs_at[k] as usize..needs_at[k + 1] as usize];
            let w = own
                .iter()
                .min_by_key(|&&w| (by_rules[w as usize], counts[w as usize]))
                .map_or(u32::MAX, |&w| w);
            if w != u32::MAX {
                by_word_at[w as usize + 1] += 1;
            }
            under.push(w);
        }
        for w in 0..words.len() {
            by_word_at[w + 1] += by_word_at[w];
        }
        let mut by_word = vec![0u32; by_word_at[words.len()] as usize];
        let mut next: Vec<u32> = by_word_at[..words.len()].to_vec();
        for (k, &w) in under.iter().enumerate() {
            if w != u32::MAX {
                by_word[next[w as usize] as usize] = k as u32;
                next[w as usize] += 1;
            }
        }
        Tables {
            words,
            slots: slots.into(),
            filter: filter.into(),
            by_word: by_word.into(),
            by_word_at: by_word_at.into(),
            needs: needs.into(),
            needs_at: needs_at.into(),
            always: always.into(),
        }
    }

    /// The number of `word`, when a form holds it.
    fn word(&self, word: &str) -> Option<u32> {
        let slots = self.slots.words();
        let mask = slots.len() - 1;
        let mut i = word_hash(word.as_bytes()) as usize & mask;
        loop {
            match le(&slots[i]) {
                0 => return None,
                w if self.words.get(w as usize - 1) == word.as_bytes() => return Some(w - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }

    pub(super) fn write(&self, w: &mut Writer) {
        self.words.write(w);
        w.u32s(&self.slots);
        w.u32s(&self.filter);
        w.u32s(&self.by_word);
        w.u32s(&self.by_word_at);
        w.u32s(&self.needs);
        w.u32s(&self.needs_at);
        w.u32s(&self.always);
    }

    /// The tables [`Tables::write`] wrote for `keys` forms, or `None` for
    /// bytes it cannot have written: every offset and number in range,
    /// and a slot left empty (a lookup ends).
    pub(super) fn read(r: &mut Reader, keys: usize) -> Option<Tables> {
        let t = Tables {
            words: Keys::read(r)?,
            slots: r.u32s()?,
            filter: r.u32s()?,
            by_word: r.u32s()?,
            by_word_at: r.u32s()?,
            needs: r.u32s()?,
            needs_at: r.u32s()?,
            always: r.u32s()?,
        };
        let words = t.words.len();
        let offsets = |at: &U32s, len: usize, of: usize| at.len() == len + 1 && at.offsets(of);
        let ok = t.slots.len().is_power_of_two()
            && t.slots.len() > words
            && t.slots.below(words + 1)
            && t.slots.iter().any(|s| s == 0)
            && t.filter.len() == FILTER_BITS / 32
            && offsets(&t.by_word_at, words, t.by_word.len())
            && t.by_word.below(keys)
            && offsets(&t.needs_at, keys, t.needs.len())
            && t.needs.below(words)
            && t.always.below(keys);
        ok.then_some(t)
    }
}

/// A large rule set's forms, scanned a text at a time by the automaton of
/// those it can hold.
#[derive(Debug)]
pub(super) struct Selector {
    tables: Tables,
    /// The automaton serving many texts, and the candidates waiting for
    /// its next rebuild.
    shared: Mutex<Shared>,
    /// The automaton over every form, once the union grows past half.
    full: OnceLock<Automaton>,
}

#[derive(Debug, Default)]
struct Shared {
    union: Option<Arc<Subset>>,
    /// Whether each form is in `union` or `pending`.
    held: Vec<bool>,
    /// Candidates of texts `union` did not serve, not yet in it.
    pending: Vec<u32>,
    /// The union reached half of every form: scan with `full`.
    use_full: bool,
}

/// An automaton over some of the forms (`forms`, sorted; `patterns`,
/// theirs).
#[derive(Debug)]
struct Subset {
    forms: Vec<u32>,
    patterns: Keys,
    automaton: Automaton,
}

impl Subset {
    /// `shared`: it scans many texts (a DFA may pay for its build).
    fn new(mut forms: Vec<u32>, keys: &Keys, shared: bool) -> Result<Subset, MatcherError> {
        forms.sort_unstable();
        forms.dedup();
        let mut patterns = Keys::default();
        for &k in &forms {
            patterns.push(keys.get(k as usize));
        }
        let automaton = Automaton::new(&patterns)?;
        if !shared {
            automaton.nfa_only();
        }
        Ok(Subset {
            automaton,
            patterns,
            forms,
        })
    }

    fn find(&self, text: &str, out: &mut Vec<(usize, usize, usize)>) {
        let ac = self.automaton.for_scan(text.len(), &self.patterns);
        out.extend(ac.find_overlapping_iter(text).map(|m| {
            (
                self.forms[m.pattern().as_usize()] as usize,
                m.start(),
                m.end(),
            )
        }));
    }
}

impl Selector {
    /// The selector over `keys` forms by their `tables`.
    pub(super) fn new(tables: Tables, keys: usize) -> Selector {
        Selector {
            tables,
            shared: Mutex::new(Shared {
                held: vec![false; keys],
                ..Shared::default()
            }),
            full: OnceLock::new(),
        }
    }

    /// The forms `text` (folded, as scanned) can hold: those matched
    /// anywhere or without words, and those whose every word is a word of
    /// the text.
    pub(super) fn candidates(&self, text: &str) -> Vec<u32> {
        let t = &self.tables;
        let mut present = vec![false; t.words.len()];
        let mut seen: Vec<u32> = Vec::new();
        // The scan hands on only words in the filter's slots.
        let mark = |word: &str| {
            if let Some(w) = t.word(word)
                && !present[w as usize]
            {
                present[w as usize] = true;
                seen.push(w);
            }
        };
        for_words_from(text, t.filter.words(), mark);
        let mut out: Vec<u32> = t.always.iter().collect();
        let (by_word, by_word_at) = (t.by_word.words(), t.by_word_at.words());
        let (needs, needs_at) = (t.needs.words(), t.needs_at.words());
        for w in seen {
            let w = w as usize;
            let under = &by_word[le(&by_word_at[w]) as usize..le(&by_word_at[w + 1]) as usize];
            for k in under.iter().map(le) {
                let k = k as usize;
                let own = &needs[le(&needs_at[k]) as usize..le(&needs_at[k + 1]) as usize];
                if own.iter().all(|n| present[le(n) as usize]) {
                    out.push(k as u32);
                }
            }
        }
        out
    }

    /// Every occurrence in `text` (folded) of a form that can stand in it:
    /// (form, start, end), as the automaton over every form finds them,
    /// perhaps in another order.
    pub(super) fn find(
        &self,
        text: &str,
        keys: &Keys,
    ) -> Result<Vec<(usize, usize, usize)>, MatcherError> {
        let mut out = Vec::new();
        let candidates = self.candidates(text);
        if candidates.is_empty() {
            return Ok(out);
        }
        let (union, missing) = {
            let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            if shared.use_full {
                drop(shared);
                return self.scan_full(text, keys);
            }
            let missing: Vec<u32> = match &shared.union {
                Some(u) => candidates
                    .into_iter()
                    .filter(|k| u.forms.binary_search(k).is_err())
                    .collect(),
                None => candidates,
            };
            if missing.is_empty() {
                (shared.union.clone(), Vec::new())
            } else {
                for &k in &missing {
                    if !std::mem::replace(&mut shared.held[k as usize], true) {
                        shared.pending.push(k);
                    }
                }
                let size = shared.union.as_ref().map_or(0, |u| u.forms.len());
                if size + shared.pending.len() > keys.len() / 2 {
                    shared.use_full = true;
                    shared.union = None;
                    drop(shared);
                    return self.scan_full(text, keys);
                }
                // Rebuilt when it grows by an eighth: rebuilds cost at
                // most nine times the final union's build.
                if shared.pending.len() * 8 >= size {
                    let mut forms = std::mem::take(&mut shared.pending);
                    if let Some(u) = &shared.union {
                        forms.extend_from_slice(&u.forms);
                    }
                    let u = Arc::new(Subset::new(forms, keys, true)?);
                    shared.union = Some(Arc::clone(&u));
                    (Some(u), Vec::new())
                } else {
                    (shared.union.clone(), missing)
                }
            }
        };
        if let Some(u) = union {
            u.find(text, &mut out);
        }
        // The forms the shared automaton lacks, in one of their own for
        // this text (no DFA: it scans once).
        if !missing.is_empty() {
            Subset::new(missing, keys, false)?.find(text, &mut out);
        }
        Ok(out)
    }

    fn scan_full(
        &self,
        text: &str,
        keys: &Keys,
    ) -> Result<Vec<(usize, usize, usize)>, MatcherError> {
        let full = match self.full.get() {
            Some(full) => full,
            None => {
                let built = Automaton::new(keys)?;
                self.full.get_or_init(|| built)
            }
        };
        Ok(full
            .for_scan(text.len(), keys)
            .find_overlapping_iter(text)
            .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
            .collect())
    }
}

/// ASCII bytes that are word characters ([`is_word`]).
const ASCII_WORD: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    t
};

/// Whether the character at byte `i` of `s` is a word character, and its
/// length.
#[inline]
fn at(s: &str, i: usize) -> (bool, usize) {
    let b = s.as_bytes()[i];
    if b < 0x80 {
        return (ASCII_WORD[b as usize], 1);
    }
    match s[i..].chars().next() {
        Some(c) => (is_word(c), c.len_utf8()),
        None => (false, 1),
    }
}

/// Word bytes among all 256 (bytes from 0x80 on are not: they begin or
/// continue a character [`at`] decodes).
const BYTE_WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = ASCII_WORD[b];
        b += 1;
    }
    t
};

/// Call `f` with each word (maximal run of word characters) of `s`: the
/// scan of [`for_words_from`] with every slot let through.
fn for_words<'a>(s: &'a str, f: impl FnMut(&'a str)) {
    static EVERY_SLOT: [[u8; 4]; FILTER_BITS / 32] = [[u8::MAX; 4]; FILTER_BITS / 32];
    for_words_from(s, &EVERY_SLOT, f);
}

/// The ASCII word bytes of `block` (up to 64 bytes) as a mask, and every
/// byte or'ed (0x80 set: a byte from 0x80 on is in it).
#[inline(always)]
fn classify(block: &[u8]) -> (u64, u8) {
    let mut word = 0u64;
    let mut high = 0u8;
    for (k, &b) in block.iter().enumerate() {
        high |= b;
        word |= u64::from(BYTE_WORD[b as usize]) << k;
    }
    (word, high)
}

/// [`classify`] of a whole block, eight bytes at a time: each byte's
/// test is a few additions on the eight at once (the bytes below 0x80:
/// a block with one from 0x80 on is read a character at a time anyway),
/// and the eight results are gathered into a byte by one multiplication.
#[inline(always)]
fn classify_64(block: &[u8; 64]) -> (u64, u8) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Bit 7 of each byte of an ASCII `x`: set where the byte is from `lo`
    // to `hi`.
    let within = |x: u64, lo: u8, hi: u8| {
        let from = x.wrapping_add(ONES * u64::from(0x80 - lo));
        let past = x.wrapping_add(ONES * u64::from(0x7f - hi));
        from & !past & HIGH
    };
    let mut word = 0u64;
    let mut high = 0u64;
    for (k, chunk) in block.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        high |= x;
        let x = x & !HIGH;
        let under = x ^ (ONES * u64::from(b'_'));
        let is_under = !(under.wrapping_add(ONES * 0x7f) | under) & HIGH;
        let flags = within(x, b'0', b'9') | within(x | (ONES * 0x20), b'a', b'z') | is_under;
        let bits = ((flags >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56;
        word |= bits << (8 * k);
    }
    let high = if high & HIGH != 0 { 0x80 } else { 0 };
    (word, high)
}

/// [`for_words`], calling `f` only with the words whose [`slot_of`] is set
/// in `filter`: most words of a page are in no slot, and are passed over
/// without a call. In a block of ASCII, the words' starts and ends come
/// from the mask of its word bytes; a block holding a byte from 0x80 on
/// is read a character at a time.
fn for_words_from<'a>(s: &'a str, filter: &[[u8; 4]], mut f: impl FnMut(&'a str)) {
    let bytes = s.as_bytes();
    let n = bytes.len();
    // The filter's test inlined where a word ends (most words fail it),
    // the call only for a word that passes.
    macro_rules! emit {
        ($from:expr, $to:expr) => {{
            let (from, to) = ($from, $to);
            if in_filter(&bytes[from..to], filter) {
                f(&s[from..to]);
            }
        }};
    }
    // Where the word being read began, while it runs on past a block.
    let mut open: Option<usize> = None;
    let mut i = 0;
    while i < n {
        let len = (n - i).min(64);
        let block = &bytes[i..i + len];
        let (word, high) = match <&[u8; 64]>::try_from(block) {
            Ok(full) => classify_64(full),
            Err(_) => classify(block),
        };
        if high < 0x80 {
            let valid = u64::MAX >> (64 - len);
            let not_word = !word & valid;
            let mut starts = word & !(word << 1);
            if let Some(from) = open {
                if not_word == 0 {
                    i += len;
                    continue;
                }
                let e = not_word.trailing_zeros() as usize;
                emit!(from, i + e);
                open = None;
                // The bytes before `e` continued that word.
                starts &= !((1u64 << e) - 1);
            }
            while starts != 0 {
                let q = starts.trailing_zeros() as usize;
                starts &= starts - 1;
                let rest = not_word >> q;
                if rest == 0 {
                    // It runs past the block.
                    open = Some(i + q);
                } else {
                    emit!(i + q, i + q + rest.trailing_zeros() as usize);
                }
            }
            i += len;
        } else {
            // A character at a time, to the first one ending past the
            // block.
            let stop = i + len;
            while i < stop {
                let (is, width) = at(s, i);
                match (is, open) {
                    (true, None) => open = Some(i),
                    (false, Some(from)) => {
                        emit!(from, i);
                        open = None;
                    }
                    _ => {}
                }
                i += width;
            }
        }
    }
    if let Some(from) = open {
        emit!(from, n);
    }
}

/// Whether a word's [`slot_of`] is set in `filter`.
#[inline(always)]
fn in_filter(word: &[u8], filter: &[[u8; 4]]) -> bool {
    let at = slot_of(word);
    le(&filter[at / 32]) & (1 << (at % 32)) != 0
}

/// A word's place in [`Tables::slots`]: FNV-1a over its bytes (the same
/// in every process, for the tables are kept in a file).
#[inline]
fn word_hash(word: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in word {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A word's slot in a selector's filter: its length and its first two
/// and last two bytes, mixed. (Its length and first and last bytes alone,
/// in 8,192 slots, let through a word of a page in six, not one in
/// fourteen, of 5,000 rules' 226 words.)
#[inline(always)]
fn slot_of(b: &[u8]) -> usize {
    let l = b.len();
    let h = l as u64
        | u64::from(b[0]) << 8
        | u64::from(b[1.min(l - 1)]) << 16
        | u64::from(b[l.saturating_sub(2)]) << 24
        | u64::from(b[l - 1]) << 32;
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_LOG)) as usize
}

const FILTER_LOG: u32 = 16;
const FILTER_BITS: usize = 1 << FILTER_LOG;

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of `s` a character at a time: the matcher's own plain
    /// scan ([`super::super::matcher::words`]), as slices.
    fn reference(s: &str) -> Vec<&str> {
        crate::check::matcher::words(s)
            .into_iter()
            .map(|(a, b)| &s[a..b])
            .collect()
    }

    fn words(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for_words(s, |w| out.push(w));
        out
    }

    #[test]
    fn words_across_blocks_and_characters() {
        let long = "a".repeat(64);
        for s in [
            String::new(),
            " ".into(),
            long.clone(),
            format!("{long} b"),
            format!("{}é{}", "x".repeat(63), "y".repeat(70)),
            format!("{} café—naïve_1 ü", " ".repeat(62)),
            "über\u{301}x. Straße's 日本語 z".into(),
        ] {
            assert_eq!(words(&s), reference(&s), "{s:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_scan_by_slots_meets_every_word_of_the_forms(
            s in "(?s)([a-cyzA-CYZ_0-9 .,\n@\\[`{/:^\x7f-]{0,300}|[a-c_0-9 .,\n\u{e9}\u{301}-]{0,300})",
            forms in proptest::collection::vec("[a-cyzA-CYZ\u{e9}_0-9]{1,3}", 0..6),
        ) {
            let mut filter = vec![0u32; FILTER_BITS / 32];
            for f in &forms {
                let at = slot_of(f.as_bytes());
                filter[at / 32] |= 1 << (at % 32);
            }
            let of_forms = |words: Vec<&str>| -> Vec<String> {
                words
                    .into_iter()
                    .filter(|w| forms.iter().any(|f| f == w))
                    .map(str::to_owned)
                    .collect()
            };
            let mut scanned = Vec::new();
            let filter: Vec<[u8; 4]> = filter.iter().map(|f| f.to_le_bytes()).collect();
            for_words_from(&s, &filter, |w| scanned.push(w));
            proptest::prop_assert_eq!(of_forms(scanned), of_forms(reference(&s)));
        }
    }

    proptest::proptest! {
        #[test]
        fn words_are_the_runs_of_word_characters(s in "(?s)([a-z_0-9 .,\n'\u{e9}\u{301}\u{2014}\u{65e5}-]{0,200}|[a-zA-Z_0-9 .,\n@\\[`{/:^-]{0,200})") {
            proptest::prop_assert_eq!(words(&s), reference(&s));
        }
    }
}
