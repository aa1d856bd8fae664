//! One automaton over every form of every rule.
//!
//! Matching is on word boundaries (Unicode aware) and case-insensitive,
//! except that every avoided form of an `exact` rule (an imported Vale rule
//! that does not ignore case), and an avoided form differing from its
//! preferred form only in case, match exactly as written: the rule preferring "OpenTelemetry" and
//! avoiding "opentelemetry" fires on "opentelemetry" only, never on
//! "OpenTelemetry" or "Opentelemetry" (unless that is listed too).
//!
//! Case folding keeps byte lengths (`case.rs`: a character whose lower case
//! has another length in UTF-8 is left as it is), so offsets in the folded
//! text are those of the file. Preferred forms are in the automaton as well:
//! where a preferred form and an avoided form compete for the same text, the
//! text as the preferred form is written wins, so the preferred form is
//! never reported, nor is an avoided form inside a longer preferred form.
//!
//! The matcher knows no file format: it finds forms in prose a [`Masker`]
//! hands it (`prose.rs`), and skips the passages its switches name.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use super::case::{self, Shape, case_key_same_len, folds_to};
use super::finding::{Finding, Severity, message};
use super::packed::{Entries, Keys, Reader, Writer};
use super::prose::{Masker, Prose, Switch, is_markup};
use super::rule::Bounds;
use super::rule::TermRule;
use super::select::{self, Selector, Tables};
use super::table::{RuleTable, TermList};

#[derive(Debug, thiserror::Error)]
pub enum MatcherError {
    #[error("cannot build the matcher over {}: {message}", crate::wording::count(*forms, "form", "forms"))]
    Build { forms: usize, message: String },
}

/// A hit in prose: a rule, a byte span, and whether it is the preferred form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub rule: usize,
    pub start: usize,
    pub end: usize,
    pub preferred: bool,
}

/// The compiled rules. Build once, check many files (it is `Sync`).
#[derive(Debug)]
pub struct Matcher {
    /// Shared with the caller: a check by 5,000 rules copied them all
    /// for each matcher.
    rules: RuleTable,
    /// Over every key, for a rule set of fewer than
    /// [`select::SELECT_FROM`] keys.
    automaton: Option<Automaton>,
    /// For a larger one: per text, an automaton over the keys it can hold.
    select: Option<Selector>,
    /// Per automaton pattern, the forms that fold to it.
    entries: Entries,
    /// Built for usage counts: every preferred form, in any case, is a hit.
    every_preferred: bool,
    /// Pattern rules: the rule, its regular expression, and for one with
    /// look-around the same without it, which finds where to try it.
    patterns: Vec<(usize, fancy_regex::Regex, Option<fancy_regex::Regex>)>,
    /// The automaton's patterns (folded forms).
    keys: Keys,
    /// Each rule's group: the rules of one imported file or term list
    /// (ids `<import>:<n>`, `terms.tsv:<line>`) form one, as the rules of one
    /// Vale style form one expression; every other rule is its own.
    groups: Vec<u32>,
    /// Every avoided form is free of markup characters ([`is_markup`]) and
    /// of runs of blanks, so a file whose masker loosens it can be scanned
    /// before it is masked (see [`Matcher::check`]).
    scan_first: bool,
    /// Per rule a fix has asked about, its avoided forms as a fix
    /// recognises them: a form matched only as written (`true`) as
    /// written, any other folded. A map of the rules asked about, not a
    /// cell per rule: 5,000 empty cells were pages of memory touched by
    /// every check.
    listed: Mutex<HashMap<usize, Listed>>,
    /// Per rule a fix has asked about, its preferred form in capitals and
    /// with an initial capital, where it may be written so
    /// ([`Matcher::shaped`]).
    shapes: Mutex<HashMap<usize, Shapes>>,
    /// The rules matched in a file's raw text (Vale's `scope: raw`), markup
    /// and code included, with their own automaton and patterns; `rules`
    /// holds the others.
    raw: Option<Box<Matcher>>,
}

pub(super) fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || is_combining_mark(c)
}

/// The common combining marks (Unicode general category M): a decomposed
/// `café` (`e` and U+0301) is one word, so it does not match `cafe`.
fn is_combining_mark(c: char) -> bool {
    matches!(
        c,
        '\u{0300}'..='\u{036F}'
            | '\u{1AB0}'..='\u{1AFF}'
            | '\u{1DC0}'..='\u{1DFF}'
            | '\u{20D0}'..='\u{20FF}'
            | '\u{FE20}'..='\u{FE2F}'
    )
}

fn is_joiner(c: char) -> bool {
    matches!(c, '.' | '/' | '-')
}

/// Whether `start..end` of `text` stands on word boundaries: not inside a
/// word, and not part of a path, domain or hyphenated compound (a `.`, `/`
/// or `-` before it, or after it and followed by a word character). A run
/// of dashes or dots (`--`, `---`, `...`) is punctuation between words, not
/// a joiner.
pub fn on_boundaries(text: &str, start: usize, end: usize) -> bool {
    let span = &text[start..end];
    let (Some(first), Some(last)) = (span.chars().next(), span.chars().next_back()) else {
        return false;
    };
    let mut before = text[..start].chars().rev();
    if let Some(prev) = before.next()
        && ((is_word(first) && is_word(prev))
            || (is_joiner(prev) && !(prev != '/' && before.next() == Some(prev))))
    {
        return false;
    }
    let mut after = text[end..].chars();
    if let Some(next) = after.next() {
        if is_word(last) && is_word(next) {
            return false;
        }
        if is_joiner(next) && after.next().is_some_and(is_word) {
            return false;
        }
    }
    true
}

/// Whether `start..end` of `text` stands between word boundaries as a
/// regular expression's `\b` reads them at both ends: a word character on
/// exactly one side of each edge (Vale's word template `\b(?:key)\b`).
fn on_regex_boundaries(text: &str, start: usize, end: usize) -> bool {
    let span = &text[start..end];
    let (Some(first), Some(last)) = (span.chars().next(), span.chars().next_back()) else {
        return false;
    };
    let prev = text[..start].chars().next_back().is_some_and(is_word);
    let next = text[end..].chars().next().is_some_and(is_word);
    is_word(first) != prev && is_word(last) != next
}

/// Whether a match at `start..end` stands as `bounds` asks.
fn stands(bounds: Bounds, text: &str, start: usize, end: usize) -> bool {
    match bounds {
        Bounds::Words => on_boundaries(text, start, end),
        Bounds::Regex => on_regex_boundaries(text, start, end),
        Bounds::None => true,
    }
}

/// A DFA scans fastest but costs memory and build time in proportion to
/// its states (5,000 rules, about 200 KiB of forms: some 20 MB and 0.14 s to
/// build); past this many pattern bytes a contiguous NFA keeps memory small.
const DFA_MAX_PATTERN_BYTES: usize = 256 * 1024;

/// A DFA's build pays for itself once the text scanned is about this many
/// times the bytes of its patterns: on the bench corpus (19 MB, 1,333
/// files) a contiguous NFA scans some 6 ms/MB slower, and a DFA over 800
/// rules takes some 4 ms to build, which a hook's check of one page never
/// earns back.
const DFA_PAYS_AFTER: usize = 32;

fn kind_for(patterns: &Keys) -> AhoCorasickKind {
    if patterns.bytes() <= DFA_MAX_PATTERN_BYTES {
        AhoCorasickKind::DFA
    } else {
        AhoCorasickKind::ContiguousNFA
    }
}

/// The forms' automaton: a contiguous NFA, cheap to build, scans until the
/// matcher has scanned enough text that a DFA pays for its build (a check
/// of a whole tree), then the DFA, built once, scans the rest.
#[derive(Debug)]
pub(super) struct Automaton {
    nfa: AhoCorasick,
    /// Built on first need when the patterns allow one ([`kind_for`]).
    dfa: OnceLock<Option<AhoCorasick>>,
    /// Bytes scanned so far, by every thread.
    scanned: AtomicUsize,
    /// Scanned bytes past which the DFA is built.
    switch_at: usize,
}

impl Automaton {
    fn build(patterns: &Keys, kind: AhoCorasickKind) -> Result<AhoCorasick, MatcherError> {
        AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .kind(Some(kind))
            .build(patterns.iter())
            .map_err(|e| MatcherError::Build {
                forms: patterns.len(),
                message: e.to_string(),
            })
    }

    pub(super) fn new(patterns: &Keys) -> Result<Automaton, MatcherError> {
        let dfa = OnceLock::new();
        if kind_for(patterns) != AhoCorasickKind::DFA {
            let _ = dfa.set(None);
        }
        let bytes = patterns.bytes();
        Ok(Automaton {
            nfa: Self::build(patterns, AhoCorasickKind::ContiguousNFA)?,
            dfa,
            scanned: AtomicUsize::new(0),
            switch_at: bytes * DFA_PAYS_AFTER,
        })
    }

    /// Never build the DFA (an automaton that scans one text).
    pub(super) fn nfa_only(&self) {
        let _ = self.dfa.set(None);
    }

    /// The automaton to scan `len` more bytes with.
    pub(super) fn for_scan(&self, len: usize, keys: &Keys) -> &AhoCorasick {
        if let Some(None) = self.dfa.get() {
            return &self.nfa;
        }
        let before = self.scanned.fetch_add(len, Ordering::Relaxed);
        if before.saturating_add(len) <= self.switch_at {
            return &self.nfa;
        }
        let dfa = self
            .dfa
            .get_or_init(|| Self::build(keys, AhoCorasickKind::DFA).ok());
        dfa.as_ref().unwrap_or(&self.nfa)
    }
}

/// Whether a preferred form (folded `key`, written `preferred`) can change
/// which avoided forms are found in text written as the preferred form: an
/// avoided form that would match some of its words (or all of them) as
/// written, or that begins inside it and runs past its end (`prefixes`: the
/// proper word-aligned prefixes of the avoided forms matched in any case,
/// folded, and of those matched as written, as written).
fn competes(
    key: &str,
    preferred: &str,
    index: &HashMap<String, usize>,
    entries: &[Vec<Form>],
    prefixes: &[HashSet<&str>; 2],
) -> bool {
    let w = words(key);
    for (i, &(start, _)) in w.iter().enumerate() {
        for &(_, end) in &w[i..] {
            if let Some(&k) = index.get(&key[start..end])
                && entries[k]
                    .iter()
                    .any(|e| !e.exact || e.form == &preferred[start..end])
            {
                return true;
            }
        }
        if start > 0
            && (prefixes[0].contains(&key[start..]) || prefixes[1].contains(&preferred[start..]))
        {
            return true;
        }
    }
    // A form without words (punctuation only) is kept, to be safe.
    w.is_empty()
}

/// Byte spans of the words (runs of word characters) of `s`.
pub(super) fn words(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                out.push((b, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((b, s.len()));
    }
    out
}

/// What a build derives from the rules' forms alone, before the
/// automaton is built from it: the automaton's patterns (folded forms),
/// per pattern the forms that fold to it, and for a large rule set the
/// selector's tables. Deriving it is most of a large rule set's build
/// (which preferred forms compete, by every avoided form's words and
/// prefixes; which words index which forms), so a process keeps it
/// across processes ([`Plans`], `.git/kapi/rules.cache`) keyed by
/// everything it is derived from ([`Plan::key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    keys: Keys,
    /// Per key, its forms; only a form matched as written keeps its text
    /// (nothing else reads it once the plan is made).
    entries: Entries,
    /// The selector's tables, for a plan of [`select::SELECT_FROM`] keys
    /// or more (and at most [`select::SELECT_MAX_BYTES`] of them).
    select: Option<Tables>,
    /// Every avoided form is free of markup characters and of runs of
    /// blanks ([`Matcher::scan_first`]).
    scan_first: bool,
}

/// A form as a build derives it, before the plan keeps it
/// ([`Entries::push`]).
struct Form<'a> {
    rule: u32,
    /// The form as written.
    form: &'a str,
    /// Matches only as written (a case-only variant of the preferred form).
    exact: bool,
    preferred: bool,
}

/// A rule's preferred form in capitals and with an initial capital
/// ([`Matcher::shaped`]).
type Shapes = [Option<Box<str>>; 2];

/// A rule's avoided forms as a fix recognises them: each as written
/// (`true`: matched only so) or folded.
type Listed = Vec<(Box<str>, bool)>;

/// A rule's avoided forms as a fix recognises them ([`Matcher::lists`]).
fn listed_forms(rule: &TermRule) -> Listed {
    let preferred = rule.preferred_form().trim();
    let folded_preferred = case_key_same_len(preferred);
    rule.avoided
        .iter()
        .map(|form| form.trim())
        .filter(|form| !form.is_empty() && *form != preferred)
        .map(|form| {
            let key = case_key_same_len(form);
            let exact = rule.exact || key == folded_preferred;
            (if exact { form.into() } else { key.into() }, exact)
        })
        .collect()
}

/// Where a build finds the plans built before and keeps those it builds.
pub trait Plans {
    /// Whether plans are kept at all (else none is looked up, and no key
    /// is computed).
    fn active(&self) -> bool;
    fn find(&mut self, key: &PlanKey) -> Option<Plan>;
    /// Keep `plan`, derived from rules that include those of the term
    /// `lists` (kept by their hash, [`TermList::hash`], and their rules'
    /// lines).
    fn keep(&mut self, key: PlanKey, lists: &[Arc<TermList>], plan: &Plan);
}

/// A plan's key: the BLAKE3 hash of the code that derives it and of every
/// part of the rules it is derived from.
pub type PlanKey = [u8; 32];

/// No plans kept: every build derives its own.
pub struct NoPlans;

impl Plans for NoPlans {
    fn active(&self) -> bool {
        false
    }
    fn find(&mut self, _: &PlanKey) -> Option<Plan> {
        None
    }
    fn keep(&mut self, _: PlanKey, _: &[Arc<TermList>], _: &Plan) {}
}

/// The sources a plan is derived by and written in: a plan kept by other
/// code is not taken. build.rs computes their checksum
/// (`KAPI_CODE_PLAN`); a test checks its list against this one.
#[cfg(test)]
pub(crate) const PLAN_SOURCES: &[&str] = &[
    include_str!("matcher.rs"),
    include_str!("case.rs"),
    include_str!("rule.rs"),
    include_str!("select.rs"),
    include_str!("packed.rs"),
    include_str!("table.rs"),
];

impl Plan {
    /// The key of the plan of `rules` (`keep_all` as in [`Matcher::build`]):
    /// kapi's version, its sources, and each held rule's preferred form,
    /// avoided forms and exactness (all a plan is derived from), each
    /// after its length; a term list by the hash of its text (its rules
    /// are all it holds, and it is not read to hash them).
    pub fn key(rules: &RuleTable, keep_all: bool) -> PlanKey {
        // The code by a CRC-32 of its sources (build.rs), as the fold's
        // checkpoint names its own.
        static CODE: OnceLock<String> = OnceLock::new();
        let code = CODE.get_or_init(|| {
            format!(
                "kapi {} matcher plan 2 sources {}",
                env!("CARGO_PKG_VERSION"),
                env!("KAPI_CODE_PLAN")
            )
        });
        let held = rules.held();
        // The bytes gathered first and hashed at once: an update per form
        // (some 30,000 for 5,000 rules) cost more than the hashing.
        let mut b = Vec::with_capacity(
            64 + 40 * rules.lists().len()
                + held
                    .iter()
                    .map(|r| {
                        32 + r.preferred_form().len()
                            + r.avoided.iter().map(|f| 8 + f.len()).sum::<usize>()
                    })
                    .sum::<usize>(),
        );
        b.extend_from_slice(code.as_bytes());
        b.push(u8::from(keep_all));
        b.extend_from_slice(&(rules.len() as u64).to_le_bytes());
        let put = |b: &mut Vec<u8>, s: &str| {
            b.extend_from_slice(&(s.len() as u64).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        };
        for rule in held {
            b.push(u8::from(rule.exact));
            put(&mut b, rule.preferred_form());
            b.extend_from_slice(&(rule.avoided.len() as u64).to_le_bytes());
            for form in &rule.avoided {
                put(&mut b, form);
            }
        }
        for list in rules.lists() {
            b.push(2);
            b.extend_from_slice(&(list.len() as u64).to_le_bytes());
            b.extend_from_slice(list.hash());
        }
        blake3::hash(&b).into()
    }

    /// The plan as bytes ([`Plan::from_bytes`] reads them back): its keys,
    /// its forms, whether it scans first, and its selector's tables
    /// ([`packed`](super::packed)'s arrays). Reading it back copies some
    /// arrays and allocates nothing per form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        self.keys.write(&mut w);
        self.entries.write(&mut w);
        w.u8(u8::from(self.scan_first));
        match &self.select {
            Some(t) => {
                w.u8(1);
                t.write(&mut w);
            }
            None => w.u8(0),
        }
        w.out
    }

    /// [`Plan::read`] of `bytes` alone.
    #[cfg(test)]
    pub fn from_bytes(bytes: &[u8]) -> Option<Plan> {
        Self::read(&std::sync::Arc::new(bytes.to_vec()), 0..bytes.len())
    }

    /// The plan [`Plan::to_bytes`] wrote at `range` of `all`, its arrays
    /// where they lie in `all` (not copied), or `None` for bytes it cannot
    /// have written (cut short, grown, an offset, count or flag out of
    /// range).
    pub fn read(all: &std::sync::Arc<Vec<u8>>, range: std::ops::Range<usize>) -> Option<Plan> {
        let mut r = Reader::new(all, range)?;
        let keys = Keys::read(&mut r)?;
        let entries = Entries::read(&mut r)?;
        let scan_first = match r.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let select = match r.u8()? {
            0 => None,
            1 => Some(Tables::read(&mut r, keys.len())?),
            _ => return None,
        };
        (r.is_empty() && entries.len() == keys.len()).then_some(Plan {
            keys,
            entries,
            select,
            scan_first,
        })
    }

    /// Whether this plan can serve a matcher of `rules` rules without an
    /// index out of range, selecting from `select_from` keys as a fresh
    /// one would (a kept plan is checked before it is taken).
    fn fits(&self, rules: usize, select_from: usize) -> bool {
        self.keys.len() == self.entries.len()
            && self.entries.fit(rules)
            && self.select.is_some() == Self::selects(&self.keys, select_from)
    }

    /// The plan of `rules` as a matcher that selects from the usual
    /// number of keys derives it.
    #[cfg(test)]
    pub fn of_rules(rules: &[TermRule]) -> Plan {
        Plan::new(rules, false, select::SELECT_FROM)
    }

    /// Whether a matcher over `keys` scans with a selector.
    fn selects(keys: &Keys, select_from: usize) -> bool {
        !keys.is_empty() && keys.len() >= select_from && keys.bytes() <= select::SELECT_MAX_BYTES
    }

    /// Derive the plan of `rules` (see [`Matcher::build`]).
    fn new(rules: &[TermRule], keep_all: bool, select_from: usize) -> Plan {
        let mut patterns: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut entries: Vec<Vec<Form>> = Vec::new();
        fn add<'a>(
            patterns: &mut Vec<String>,
            index: &mut HashMap<String, usize>,
            entries: &mut Vec<Vec<Form<'a>>>,
            key: String,
            entry: Form<'a>,
        ) {
            let k = *index.entry(key).or_insert_with_key(|key| {
                patterns.push(key.clone());
                entries.push(Vec::new());
                patterns.len() - 1
            });
            entries[k].push(entry);
        }
        let mut with_avoided = vec![false; rules.len()];
        for (r, rule) in rules.iter().enumerate() {
            let preferred = rule.preferred_form().trim();
            let folded_preferred = case_key_same_len(preferred);
            for form in &rule.avoided {
                let form = form.trim();
                if form.is_empty() || form == preferred {
                    continue;
                }
                let key = case_key_same_len(form);
                let exact = rule.exact || key == folded_preferred;
                let entry = Form {
                    rule: r as u32,
                    form,
                    exact,
                    preferred: false,
                };
                add(&mut patterns, &mut index, &mut entries, key, entry);
                with_avoided[r] = true;
            }
        }
        // Proper word-aligned prefixes of every avoided form, for overlaps:
        // folded for forms matched in any case, as written for exact ones.
        let mut prefixes: [HashSet<&str>; 2] = [HashSet::new(), HashSet::new()];
        if !keep_all {
            for (p, list) in patterns.iter().zip(&entries) {
                for &(_, end) in words(p).iter().filter(|&&(_, end)| end < p.len()) {
                    for e in list {
                        if e.exact {
                            prefixes[1].insert(&e.form[..end]);
                        } else {
                            prefixes[0].insert(&p[..end]);
                        }
                    }
                }
            }
        }
        let mut preferred_keys: Vec<(String, Form)> = Vec::new();
        for (r, rule) in rules.iter().enumerate() {
            let preferred = rule.preferred_form().trim();
            if !with_avoided[r] || preferred.is_empty() {
                continue;
            }
            let key = case_key_same_len(preferred);
            if keep_all || competes(&key, preferred, &index, &entries, &prefixes) {
                preferred_keys.push((
                    key,
                    Form {
                        rule: r as u32,
                        form: preferred,
                        exact: false,
                        preferred: true,
                    },
                ));
            }
        }
        drop(prefixes);
        for (key, entry) in preferred_keys {
            add(&mut patterns, &mut index, &mut entries, key, entry);
        }
        let mut keys = Keys::default();
        let mut packed = Entries::default();
        for (key, list) in patterns.iter().zip(&entries) {
            keys.push(key.as_bytes());
            packed.push(list.iter().map(|e| (e.rule, e.exact, e.preferred, e.form)));
        }
        let scan_first = patterns.iter().zip(&entries).all(|(key, list)| {
            // Byte by byte: `str::contains` costs a searcher per key
            // (5 M instructions for 12,900 keys).
            list.iter().all(|e| e.preferred)
                || !(key.bytes().any(is_markup) || key.as_bytes().windows(2).any(|w| w == b"  "))
        });
        let select = Self::selects(&keys, select_from).then(|| {
            Tables::new(
                &patterns,
                |k| {
                    entries[k]
                        .iter()
                        .any(|e| rules[e.rule as usize].bounds == Bounds::None)
                },
                |k| entries[k].iter().map(|e| e.rule),
            )
        });
        Plan {
            keys,
            entries: packed,
            select,
            scan_first,
        }
    }
}

impl Matcher {
    /// Build one automaton over every avoided form, and the preferred forms
    /// that can compete with one: a preferred form is left out when no
    /// avoided form could match inside it, overlap its end, or match its
    /// whole text as written (it could change no finding, and leaving it out
    /// keeps the automaton small for large rule sets).
    #[cfg(test)]
    pub fn new(rules: &[TermRule]) -> Result<Self, MatcherError> {
        Self::with_plans(rules.to_vec(), &mut NoPlans)
    }

    /// [`Matcher::new`], taking the rules, and the plans of its automata
    /// from `plans` when it holds them (else keeping the ones built there).
    pub fn with_plans(
        rules: impl Into<RuleTable>,
        plans: &mut dyn Plans,
    ) -> Result<Self, MatcherError> {
        Self::selecting_from(rules.into(), plans, select::SELECT_FROM)
    }

    /// [`Matcher::with_plans`], scanning each text with only the keys it
    /// can hold from `select_from` keys on.
    fn selecting_from(
        rules: RuleTable,
        plans: &mut dyn Plans,
        select_from: usize,
    ) -> Result<Self, MatcherError> {
        // A term list's rules are never raw: only the held ones are read.
        if !rules.held().iter().any(|r| r.raw) {
            return Self::build(rules, false, false, plans, select_from);
        }
        let (raw, prose): (Vec<TermRule>, Vec<TermRule>) =
            rules.all().iter().cloned().partition(|r| r.raw);
        let mut m = Self::build(prose.into(), false, false, plans, select_from)?;
        m.raw = Some(Box::new(Self::build(
            raw.into(),
            false,
            false,
            plans,
            select_from,
        )?));
        Ok(m)
    }

    /// Like [`Matcher::new`], with every preferred form in the automaton so
    /// that usage counts see them all.
    pub fn for_usage(rules: &[TermRule]) -> Result<Self, MatcherError> {
        Self::for_usage_with(rules.to_vec(), &mut NoPlans)
    }

    /// [`Matcher::for_usage`], taking the rules, with `plans` as in
    /// [`Matcher::with_plans`].
    pub fn for_usage_with(
        rules: impl Into<RuleTable>,
        plans: &mut dyn Plans,
    ) -> Result<Self, MatcherError> {
        Self::build(rules.into(), true, true, plans, select::SELECT_FROM)
    }

    /// `keep_all`: every preferred form in the automaton; `every_preferred`:
    /// a preferred form in any case is a hit (usage counts); from
    /// `select_from` keys on, a selector.
    ///
    /// A plan kept before serves without reading a term list's rules: they
    /// are read one by one as a text is found to hold their forms
    /// ([`RuleTable`]), so a page checked by 5,000 rules reads the few it
    /// writes.
    fn build(
        rules: RuleTable,
        keep_all: bool,
        every_preferred: bool,
        plans: &mut dyn Plans,
        select_from: usize,
    ) -> Result<Self, MatcherError> {
        let n = rules.len();
        let plan = if plans.active() {
            let key = Plan::key(&rules, keep_all);
            match plans.find(&key).filter(|p| p.fits(n, select_from)) {
                Some(plan) => plan,
                None => {
                    let plan = Plan::new(rules.all(), keep_all, select_from);
                    plans.keep(key, rules.lists(), &plan);
                    plan
                }
            }
        } else {
            Plan::new(rules.all(), keep_all, select_from)
        };
        let Plan {
            keys,
            entries,
            select,
            scan_first,
        } = plan;
        let (automaton, select) = match select {
            Some(tables) => (None, Some(Selector::new(tables, keys.len()))),
            None if keys.is_empty() => (None, None),
            None => (Some(Automaton::new(&keys)?), None),
        };
        // A term list's rules have no pattern: only the held ones are read.
        let mut compiled = Vec::new();
        for (r, rule) in rules.held().iter().enumerate() {
            if let Some(p) = &rule.pattern {
                let words = rule.bounds != Bounds::None;
                let re =
                    crate::formats::pattern::compile(p, !rule.exact, words).map_err(|message| {
                        MatcherError::Build {
                            forms: 1,
                            message: format!("rule {}: {message}", rule.id),
                        }
                    })?;
                let near = crate::formats::pattern::without_lookaround(p)
                    .and_then(|q| crate::formats::pattern::compile(&q, !rule.exact, words).ok());
                compiled.push((r, re, near));
            }
        }
        let groups = rules.groups();
        Ok(Matcher {
            rules,
            automaton,
            select,
            entries,
            every_preferred,
            patterns: compiled,
            keys,
            scan_first,
            shapes: Mutex::default(),
            listed: Mutex::default(),
            raw: None,
            groups,
        })
    }

    /// Every rule (a term list's read whole on this call).
    pub fn rules(&self) -> &[TermRule] {
        self.rules.all()
    }

    /// Every occurrence of a key in `text` (folded) that can stand there
    /// (pattern, start, end): all of them, or with a selector, those of
    /// the keys whose words the text writes (the same hits).
    fn find(&self, text: &str) -> Vec<(usize, usize, usize)> {
        if let Some(select) = &self.select {
            // Its automata are over some of the keys, whose bytes were
            // bounded when it was made (`SELECT_MAX_BYTES`), far below
            // what an automaton can hold: a build cannot fail.
            return select
                .find(text, &self.keys)
                .expect("an automaton over at most SELECT_MAX_BYTES of keys builds");
        }
        let Some(automaton) = &self.automaton else {
            return Vec::new();
        };
        automaton
            .for_scan(text.len(), &self.keys)
            .find_overlapping_iter(text)
            .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
            .collect()
    }

    /// Hits in masked prose (`masked` is the prose, `original` the file; both
    /// the same length): avoided and preferred forms, leftmost-longest, not
    /// overlapping, switched-off rules removed.
    pub fn hits(&self, original: &str, prose: &Prose) -> Vec<Hit> {
        let masked = &prose.text;
        debug_assert_eq!(masked.len(), original.len());
        // (start, end, priority, rule); priority 0 = the preferred form as
        // written, 1 = avoided, 2 = the preferred form in another case.
        let mut cands: Vec<(usize, usize, u8, usize)> = Vec::new();
        self.pattern_hits(original, masked, &mut cands);
        if self.keys.is_empty() {
            return self.resolve(cands, prose);
        }
        let folded = case_key_same_len(masked);
        let found = self.find(&folded);
        self.form_hits(original, masked, found.into_iter(), &mut cands);
        self.resolve(cands, prose)
    }

    /// Candidates from occurrences of the automaton's patterns in the
    /// folded masked text (pattern, start, end): on word boundaries, exact
    /// forms as written, the preferred form only as written.
    fn form_hits(
        &self,
        original: &str,
        masked: &str,
        found: impl Iterator<Item = (usize, usize, usize)>,
        cands: &mut Vec<(usize, usize, u8, usize)>,
    ) {
        for (k, s, e) in found {
            if !original.is_char_boundary(s) || !original.is_char_boundary(e) {
                continue;
            }
            let written = &original[s..e];
            // A match never spans masked text (`*super*trait` is not
            // `super trait`).
            if masked.as_bytes()[s..e] != *written.as_bytes() {
                continue;
            }
            let mut seen: Vec<usize> = Vec::new();
            let mut stand = [None; 3];
            for entry in self.entries.of(k) {
                let rule = entry.rule as usize;
                if entry.exact && written.as_bytes() != self.entries.form(&entry) {
                    continue;
                }
                let bounds = self.rules[rule].bounds;
                if !*stand[bounds as usize].get_or_insert_with(|| stands(bounds, masked, s, e)) {
                    continue;
                }
                let priority = if !entry.preferred {
                    1
                } else if written == self.rules[rule].preferred_form().trim() {
                    0
                } else if self.every_preferred && !self.rules[rule].exact {
                    // Case matters to an exact rule: its preferred form
                    // counts only as written.
                    2
                } else {
                    // Only the preferred form as written stands against the
                    // avoided forms; in another case it is counted for usage.
                    continue;
                };
                if !seen.contains(&rule) || priority == 0 {
                    seen.push(rule);
                    cands.push((s, e, priority, rule));
                }
            }
        }
    }

    /// The hits of a file, scanning `loose` (its text as `masker` loosens
    /// it, [`Masker::loosened`]) before masking it: `None` when no avoided
    /// form can be found in its prose (the file is then never masked).
    /// Masking only blanks bytes, and what it blanks beside or between
    /// words is markup ([`is_markup`]); so every occurrence of a form in
    /// the masked text is one in the file's text with markup blanked, where
    /// the scan looks, and a finding needs an avoided form there on
    /// loosened word boundaries (and, for an exact form, written as is).
    /// The occurrences found are then checked against the masked text, as
    /// a scan of it would find them.
    fn scanned_hits(
        &self,
        text: &str,
        loose: &str,
        masker: &impl Masker,
    ) -> Option<(Prose, Vec<Hit>)> {
        if self.keys.is_empty() {
            return None;
        }
        let found = self.find(loose);
        // Loosened text may stand a form on other boundaries than the
        // masked text does; only kapi's own boundaries are judged here.
        let possible = found.iter().any(|&(k, s, e)| {
            text.is_char_boundary(s)
                && text.is_char_boundary(e)
                && self.entries.of(k).any(|en| {
                    !en.preferred
                        && (!en.exact || text.as_bytes()[s..e] == *self.entries.form(&en))
                        && (self.rules[en.rule as usize].bounds != Bounds::Words
                            || on_boundaries(loose, s, e))
                })
        });
        if !possible {
            return None;
        }
        let p = masker.prose(text);
        let masked = &p.text;
        let in_masked = found.into_iter().filter(|&(k, s, e)| {
            masked.is_char_boundary(s)
                && masked.is_char_boundary(e)
                && folds_to(&masked[s..e], self.keys.get(k))
        });
        let mut cands = Vec::new();
        self.form_hits(text, masked, in_masked, &mut cands);
        let hits = self.resolve(cands, &p);
        Some((p, hits))
    }

    /// Matches of the pattern rules in masked prose: on word boundaries (as
    /// the literal forms), never text written as the rule's preferred form.
    /// A pattern that gives up (backtracking past its limit) on a file finds
    /// nothing more there.
    fn pattern_hits(
        &self,
        original: &str,
        masked: &str,
        cands: &mut Vec<(usize, usize, u8, usize)>,
    ) {
        for (rule, re, near) in &self.patterns {
            let preferred = self.rules[*rule].preferred_form().trim();
            // The expression already holds `\b` at both ends, or none.
            let words = self.rules[*rule].bounds == Bounds::Words;
            let mut push = |s: usize, e: usize| {
                if s == e || (words && !on_boundaries(masked, s, e)) {
                    return;
                }
                let Some((s, e)) = unmasked_core(original, masked, s, e) else {
                    return;
                };
                if original[s..e].trim() != preferred {
                    cands.push((s, e, 1, *rule));
                }
            };
            let Some(near) = near else {
                for m in re.find_iter(masked) {
                    let Ok(m) = m else { break };
                    push(m.start(), m.end());
                }
                continue;
            };
            // Try the pattern only where it can match: from each match of
            // it without look-around, for a match starting on that line; its
            // look-around sees to the end of the next line (`e.g.` at a line
            // end is followed by the newline, as Vale sees it).
            let line_end = |from: usize| {
                memchr::memchr(b'\n', &masked.as_bytes()[from..]).map_or(masked.len(), |p| from + p)
            };
            let mut pos = 0;
            while pos <= masked.len() {
                let Ok(Some(m)) = near.find_from_pos(masked, pos) else {
                    break;
                };
                let this_line = line_end(m.end());
                let window = line_end((this_line + 1).min(masked.len()));
                let next = masked[m.start()..]
                    .chars()
                    .next()
                    .map_or(masked.len() + 1, |c| m.start() + c.len_utf8());
                match re.find_from_pos(&masked[..window], m.start()) {
                    Ok(Some(f)) if f.start() <= this_line => {
                        push(f.start(), f.end());
                        pos = f.end().max(next);
                    }
                    _ => pos = next,
                }
            }
        }
    }

    /// The hits among the candidates: leftmost-longest, not overlapping,
    /// switched-off rules removed.
    fn resolve(&self, mut cands: Vec<(usize, usize, u8, usize)>, prose: &Prose) -> Vec<Hit> {
        if cands.is_empty() {
            return Vec::new();
        }
        // Within a group, leftmost, then longest, then the preferred form as
        // written; groups never hide one another's matches.
        let group = |c: &(usize, usize, u8, usize)| self.groups[c.3];
        cands.sort_by(|a, b| {
            group(a)
                .cmp(&group(b))
                .then(a.0.cmp(&b.0))
                .then(b.1.cmp(&a.1))
                .then(a.2.cmp(&b.2))
        });
        let mut hits = Vec::new();
        let mut taken_end = 0usize;
        let mut taken: Option<(usize, usize, u8)> = None;
        let mut current: Option<u32> = None;
        for c in cands {
            let (s, e, prio, rule) = c;
            if current == Some(group(&c)) {
                if let Some((ts, te, tp)) = taken
                    && ts == s
                    && te == e
                {
                    // Same span in one group: an avoided span reports once
                    // (one alert, as Vale's one expression per style); a
                    // preferred form several rules share counts for each
                    // (usage).
                    if prio == tp
                        && prio != 1
                        && !hits
                            .iter()
                            .rev()
                            .take_while(|h: &&Hit| h.start == s)
                            .any(|h| h.rule == rule)
                    {
                        hits.push(Hit {
                            rule,
                            start: s,
                            end: e,
                            preferred: true,
                        });
                    }
                    continue;
                }
                if s < taken_end {
                    continue;
                }
            }
            current = Some(group(&c));
            taken = Some((s, e, prio));
            taken_end = e;
            hits.push(Hit {
                rule,
                start: s,
                end: e,
                preferred: prio != 1,
            });
        }
        hits.sort_by_key(|h| (h.start, h.end, h.rule));
        if !prose.switches.is_empty() {
            // One sweep over hits and switches, both by start: each hit
            // meets only the switches open where it starts.
            let mut order: Vec<&Switch> = prose.switches.iter().collect();
            order.sort_by_key(|sw| sw.start);
            let mut next = 0;
            let mut open: Vec<&Switch> = Vec::new();
            hits.retain(|h| {
                while next < order.len() && order[next].start <= h.start {
                    open.push(order[next]);
                    next += 1;
                }
                open.retain(|sw| h.start < sw.end);
                !open.iter().any(|sw| {
                    sw.selectors
                        .iter()
                        .any(|sel| self.rules[h.rule].is_named_by(sel))
                })
            });
        }
        hits
    }

    /// Check one file's text, masked by `masker` (the file's format);
    /// `path` is only carried into the findings.
    pub fn check(&self, path: &str, text: &str, masker: impl Masker) -> Vec<Finding> {
        let Some(raw) = &self.raw else {
            return self.check_prose(path, text, masker);
        };
        let mut found = raw.check_prose(path, text, Raw(&masker));
        // A raw match may stand in markup or code: it is reported, never
        // rewritten (`--fix` writes only prose).
        for f in &mut found {
            f.fix = None;
        }
        found.extend(self.check_prose(path, text, masker));
        found.sort_by_key(|f| (f.start, f.end));
        found
    }

    /// [`Matcher::check`] of the rules matched in prose.
    fn check_prose(&self, path: &str, text: &str, masker: impl Masker) -> Vec<Finding> {
        if self.keys.is_empty() && self.patterns.is_empty() {
            return Vec::new();
        }
        let hits: Vec<Hit> = if self.patterns.is_empty()
            && self.scan_first
            && let Some(loose) = masker.loosened(text)
        {
            match self.scanned_hits(text, &loose, &masker) {
                Some((_, hits)) => hits,
                None => return Vec::new(),
            }
        } else {
            let p = masker.prose(text);
            self.hits(text, &p)
        };
        let hits: Vec<Hit> = hits.into_iter().filter(|h| !h.preferred).collect();
        if hits.is_empty() {
            return Vec::new();
        }
        // Hits come in increasing order: lines are found, columns counted
        // and source lines copied once each, so a file whose one long line
        // holds many hits costs its length, not its length per hit.
        let mut lines = LineIndex::new(text);
        hits.into_iter()
            .map(|h| {
                let rule = &self.rules[h.rule];
                let matched = text[h.start..h.end].to_string();
                let located = lines.locate(h.start);
                let (line, column, line_offset) =
                    (located.line, located.column, h.start - located.start);
                let end_column = column + matched.chars().count();
                let fails = rule.binds();
                Finding {
                    rule: rule.id.to_string(),
                    rules: vec![rule.id.to_string()],
                    path: path.to_string(),
                    line,
                    column,
                    end_column,
                    start: h.start,
                    end: h.end,
                    message: match &rule.level {
                        Some(level) => format!(
                            "{} (Vale {level})",
                            message(rule.preferred_form(), &matched, rule.suggested)
                        ),
                        None => message(rule.preferred_form(), &matched, rule.suggested),
                    },
                    level: rule.level.clone(),
                    fix: self.fix_for(h.rule, &matched),
                    matched,
                    preferred: rule.preferred_form().to_owned(),
                    suggested: rule.suggested,
                    fails,
                    severity: if fails {
                        Severity::Error
                    } else if rule.suggested {
                        Severity::Note
                    } else {
                        Severity::Warning
                    },
                    workspace: None,
                    repository: None,
                    decision: None,
                    source_line: located.source,
                    line_offset,
                }
            })
            .collect()
    }
}

/// The part of a pattern's match `s..e` in masked prose that stands in
/// the text as written, as Vale's rendered text has it: a match never
/// spans masked text, but one whose edges run over masked markup (the
/// `*` of `*trait* -- this`, a link's target) is trimmed to the text
/// between, for Vale reads rendered text, where that markup is no more
/// (`\s*--\s*` finds ` -- ` there). A masked run holding a backtick is
/// code, which Vale reads as `*` characters, never blanks: a match running
/// over it is none (`` `Rc<T>` -- `` gives no ` -- ` in Vale). `None` when
/// nothing of the match is left, or masked text is inside it.
fn unmasked_core(original: &str, masked: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let (o, m) = (original.as_bytes(), masked.as_bytes());
    if o[s..e] == m[s..e] {
        return Some((s, e));
    }
    let solid = |i: usize| o[i] == m[i] && !o[i].is_ascii_whitespace();
    let first = (s..e).find(|&i| solid(i))?;
    let last = (s..e).rev().find(|&i| solid(i))?;
    let a = (s..first)
        .rev()
        .find(|&i| o[i] != m[i])
        .map_or(s, |i| i + 1);
    let b = (last + 1..e).find(|&i| o[i] != m[i]).unwrap_or(e);
    let clean = o[a..b] == m[a..b]
        && !o[s..a].contains(&b'`')
        && !o[b..e].contains(&b'`')
        && original.is_char_boundary(a)
        && original.is_char_boundary(b);
    clean.then_some((a, b))
}

/// A file's raw text as prose (Vale's `scope: raw`): nothing is masked,
/// and rules are switched off where the file's own format switches them.
struct Raw<'a, M>(&'a M);

impl<M: Masker> Masker for Raw<'_, M> {
    fn prose(&self, text: &str) -> Prose {
        let switches = if text.contains("kapi off") || text.contains("vale off") {
            self.0.prose(text).switches
        } else {
            Vec::new()
        };
        Prose {
            text: text.to_owned(),
            switches,
        }
    }
}

impl Matcher {
    /// What a fix writes in place of `matched`, an avoided text the rule
    /// `rule` found: its preferred form, in the shape of the text where
    /// the rule allows it ([`case::in_shape`]: capitals, else an initial
    /// capital, when the rule then finds nothing in it), else as the rule
    /// writes it. `None` for a rule with no preferred form, and for a text
    /// that is none of the rule's listed forms (a pattern's match may hold
    /// more than the term: `e.g. ` with its space).
    fn fix_for(&self, rule: usize, matched: &str) -> Option<String> {
        let preferred = self.rules[rule].preferred_form().trim();
        if preferred.is_empty() || !self.lists(rule, matched) {
            return None;
        }
        let tries: &[Shape] = match case::shape(matched) {
            Shape::Capitals => &[Shape::Capitals, Shape::Initial],
            Shape::Initial => &[Shape::Initial],
            Shape::AsWritten => &[],
        };
        let shaped = tries.iter().find_map(|&s| self.shaped(rule, s));
        Some(shaped.unwrap_or_else(|| preferred.to_owned()))
    }

    /// Rule `rule`'s preferred form in `shape`, when the rule allows it
    /// and reports nothing in it; worked out once per rule.
    fn shaped(&self, rule: usize, shape: Shape) -> Option<String> {
        let known = self
            .shapes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&rule)
            .cloned();
        let [capitals, initial] = known.unwrap_or_else(|| {
            let r = &self.rules[rule];
            let preferred = r.preferred_form().trim();
            let shapes = [Shape::Capitals, Shape::Initial].map(|s| {
                case::in_shape(preferred, s, r.exact)
                    .filter(|form| {
                        let prose = Prose {
                            text: form.clone(),
                            switches: Vec::new(),
                        };
                        !self
                            .hits(form, &prose)
                            .iter()
                            .any(|h| h.rule == rule && !h.preferred)
                    })
                    .map(String::into_boxed_str)
            });
            let mut all = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
            all.entry(rule).or_insert(shapes).clone()
        });
        match shape {
            Shape::Capitals => capitals.map(String::from),
            Shape::Initial => initial.map(String::from),
            Shape::AsWritten => None,
        }
    }

    /// Whether `matched` is one of the avoided forms rule `rule` lists, as
    /// the matcher reads it: as written for a form matched exactly, in any
    /// case otherwise.
    fn lists(&self, rule: usize, matched: &str) -> bool {
        let mut all = self.listed.lock().unwrap_or_else(|e| e.into_inner());
        let listed = all
            .entry(rule)
            .or_insert_with(|| listed_forms(&self.rules[rule]));
        listed.iter().any(|(form, exact)| {
            if *exact {
                **form == *matched
            } else {
                folds_to(matched, form.as_bytes())
            }
        })
    }
}

/// Line lookups for increasing offsets: each line is scanned, counted
/// and copied once however many hits it holds.
struct LineIndex<'a> {
    text: &'a str,
    line: usize,
    start: usize,
    /// The current line's end, once found.
    end: Option<usize>,
    /// A point on the current line and its 1-based column, in characters.
    counted: (usize, usize),
    /// The current line, copied once and shared by its findings.
    source: Option<std::sync::Arc<str>>,
}

/// Where an offset is.
struct Located {
    line: usize,
    /// The line's first byte.
    start: usize,
    /// The 1-based column of the offset, in characters.
    column: usize,
    source: std::sync::Arc<str>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        LineIndex {
            text,
            line: 1,
            start: 0,
            end: None,
            counted: (0, 1),
            source: None,
        }
    }

    /// The line, column and source line of `offset`.
    fn locate(&mut self, offset: usize) -> Located {
        if offset < self.counted.0 {
            *self = LineIndex::new(self.text);
        }
        let bytes = self.text.as_bytes();
        if self.end.is_some_and(|end| offset > end) || self.end.is_none() {
            let base = self.start;
            for nl in memchr::memchr_iter(b'\n', &bytes[base..offset]) {
                self.line += 1;
                self.start = base + nl + 1;
            }
            if self.start != base || self.end.is_none() {
                self.end = Some(
                    memchr::memchr(b'\n', &bytes[offset..]).map_or(bytes.len(), |p| offset + p),
                );
                self.counted = (self.start, 1);
                self.source = None;
            }
        }
        let (from, column) = self.counted;
        let column = column + self.text[from..offset].chars().count();
        self.counted = (offset, column);
        let end = self.end.unwrap_or(bytes.len());
        let source = self
            .source
            .get_or_insert_with(|| self.text[self.start..end].trim_end_matches('\r').into())
            .clone();
        Located {
            line: self.line,
            start: self.start,
            column,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::markdown::{TextKind, loosened, prose};

    /// A binding rule, alone in its group: line 1 of its own term list
    /// `name` (its id reads `name:1`).
    pub(crate) fn rule(name: &str, preferred: &str, avoided: &[&str]) -> TermRule {
        TermRule::listed(name, 1, preferred, avoided)
    }

    fn found(rules: &[TermRule], text: &str) -> Vec<String> {
        Matcher::new(rules)
            .unwrap()
            .check("a.md", text, TextKind::Markdown)
            .into_iter()
            .map(|f| format!("{}:{}:{}", f.line, f.column, f.matched))
            .collect()
    }

    fn fixes(rules: &[TermRule], text: &str) -> Vec<Option<String>> {
        Matcher::new(rules)
            .unwrap()
            .check("a.md", text, TextKind::Markdown)
            .into_iter()
            .map(|f| f.fix)
            .collect()
    }

    #[test]
    fn a_fix_writes_the_preferred_form_in_the_case_the_rule_allows() {
        let open = [rule("1", "open source", &["open-source"])];
        assert_eq!(
            fixes(&open, "Open-source, OPEN-SOURCE and open-source."),
            [
                Some("Open source".into()),
                Some("OPEN SOURCE".into()),
                Some("open source".into())
            ]
        );
        // A form with a capital is the term as written.
        let quick = [rule("1", "Quickcast", &["quick cast"])];
        assert_eq!(fixes(&quick, "QUICK CAST"), [Some("Quickcast".into())]);
        // Capitalized, the form would hold an avoided form the rule
        // reports ("grafana alloy" stands against "alloy" only as written):
        // written as the rule has it.
        let alloy = [rule("1", "grafana alloy", &["alloy"])];
        assert_eq!(fixes(&alloy, "Alloy runs."), [Some("grafana alloy".into())]);
        // A case-only variant the rule avoids is not written either.
        let kapi = [rule("1", "kapi", &["Kapi", "kappi"])];
        assert_eq!(
            fixes(&kapi, "Kapi and Kappi."),
            [Some("kapi".into()), Some("kapi".into())]
        );
        // A rule matched as written asks for its form exactly.
        let exact = [TermRule {
            exact: true,
            ..rule("1", "open source", &["Open-source"])
        }];
        assert_eq!(fixes(&exact, "Open-source."), [Some("open source".into())]);
        // No preferred form, or a pattern's match: nothing to write.
        assert_eq!(fixes(&[rule("1", "", &["utilize"])], "utilize"), [None]);
        let pattern = [TermRule {
            pattern: Some("quick(?= cast)".into()),
            ..rule("1", "fast", &[])
        }];
        assert_eq!(fixes(&pattern, "quick cast"), [None]);
    }

    /// Many hits on one long line: each line is copied once and shared,
    /// columns are counted once. Before, every finding copied the whole
    /// line and counted its characters from the line's start: this line
    /// (about 1.2 MB, 100,000 hits) needed over 100 GB and minutes.
    #[test]
    fn many_hits_on_one_long_line_stay_linear() {
        let text = "Open Quick cast. ".repeat(100_000) + "\nQuick cast\n";
        let rules = [
            rule("1", "Quickcast", &["Quick cast"]),
            rule("2", "QC", &["Quick cast"]),
        ];
        let findings = Matcher::new(&rules)
            .unwrap()
            .check("a.md", &text, TextKind::Text);
        assert_eq!(findings.len(), 2 * 100_000 + 2);
        let first = &findings[0].source_line;
        assert!(
            findings[..200_000]
                .iter()
                .all(|f| std::sync::Arc::ptr_eq(&f.source_line, first)),
            "one copy of the line, shared"
        );
        let last = &findings[199_999];
        assert_eq!((last.line, last.column), (1, 17 * 99_999 + 6));
        assert_eq!(
            &first[last.line_offset..last.line_offset + 10],
            "Quick cast"
        );
        let next = &findings[200_000];
        assert_eq!(
            (next.line, next.column, &*next.source_line),
            (2, 1, "Quick cast")
        );
    }

    #[test]
    fn case_insensitive_except_case_only_forms() {
        let r = [rule(
            "1",
            "OpenTelemetry",
            &["Open Telemetry", "opentelemetry", "Opentelemetry"],
        )];
        assert_eq!(
            found(
                &r,
                "OpenTelemetry, open telemetry, OPEN TELEMETRY, opentelemetry, Opentelemetry, OPENTELEMETRY"
            ),
            [
                "1:16:open telemetry",
                "1:32:OPEN TELEMETRY",
                "1:48:opentelemetry",
                "1:63:Opentelemetry"
            ]
        );
        let q = [rule("2", "quickcast", &["Quickcast"])];
        assert!(found(&q, "quickcast").is_empty());
        assert_eq!(found(&q, "Quickcast QUICKCAST"), ["1:1:Quickcast"]);
    }

    #[test]
    fn exact_rules_match_every_avoided_form_as_written() {
        let mut r = rule("1", "GitHub", &["Github", "git hub"]);
        r.exact = true;
        let text = "Github GITHUB github git hub Git Hub";
        assert_eq!(
            found(std::slice::from_ref(&r), text),
            ["1:1:Github", "1:22:git hub"]
        );
        let mut reject = rule("2", "", &["utilize"]);
        reject.exact = true;
        assert_eq!(found(&[reject.clone()], "Utilize utilize"), ["1:9:utilize"]);
        let m = Matcher::for_usage(&[r, reject]).unwrap();
        let used = crate::check::usage::count(&m, text, TextKind::Text);
        assert_eq!(
            (used[0].preferred, used[0].avoided),
            (0, 2),
            "GITHUB and github are neither avoided nor preferred as written"
        );
    }

    #[test]
    fn word_boundaries_paths_and_domains() {
        let r = [rule("4", "GitHub", &["github", "Github"])];
        assert!(
            found(
                &r,
                "github.com/x ../.github docs/github/x githubber my-github _github"
            )
            .is_empty()
        );
        assert_eq!(
            found(&r, "on github. Github-"),
            ["1:4:github", "1:12:Github"]
        );
        // Dashes and dots in a run are punctuation, on either side.
        assert_eq!(
            found(&r, "Github--Github...github"),
            ["1:1:Github", "1:9:Github", "1:18:github"]
        );
    }

    #[test]
    fn unicode_boundaries_and_case() {
        let r = [rule("5", "Straße", &["Strasse", "Über Blick"])];
        assert_eq!(
            found(&r, "éStrasse strasse ÜBER BLICK"),
            ["1:10:strasse", "1:18:ÜBER BLICK"]
        );
    }

    #[test]
    fn combining_marks_continue_a_word() {
        let r = [rule("6", "café", &["cafe"])];
        assert!(found(&r, "cafe\u{301} and cafe\u{0301}s").is_empty());
        assert_eq!(found(&r, "a cafe here"), ["1:3:cafe"]);
        let r = [rule("7", "x", &["e\u{301}t"])];
        assert!(found(&r, "ae\u{301}t").is_empty());
        assert!(is_combining_mark('\u{20D7}') && !is_combining_mark('a'));
    }

    #[test]
    fn longest_form_wins_and_preferred_never_reported() {
        // Two rules of one term list: one group.
        let r = [
            TermRule::listed(
                "f",
                9,
                "Quickstart",
                &["Quick start", "Quick Start", "QuickStart"],
            ),
            TermRule::listed("f", 10, "start", &["Start"]),
        ];
        assert_eq!(
            found(&r, "Quick Start here. Quickstart. QuickStart."),
            ["1:1:Quick Start", "1:31:QuickStart"]
        );
        // Rules of different groups (files, or rules of the log) never hide
        // one another's matches.
        let apart = [r[0].clone(), rule("x", "start", &["Start"])];
        assert_eq!(
            found(&apart, "Quick Start here."),
            ["1:1:Quick Start", "1:7:Start"]
        );
        let p = [rule("a", "Grafana Alloy", &["Alloy"])];
        assert_eq!(found(&p, "Grafana Alloy and Alloy"), ["1:19:Alloy"]);
    }

    #[test]
    fn lines_and_columns_in_characters() {
        let r = [rule("4", "GitHub", &["Github"])];
        assert_eq!(
            found(&r, "x\r\nnaïve Github\nGithub"),
            ["2:7:Github", "3:1:Github"]
        );
    }

    #[test]
    fn switch_one_rule_off() {
        let r = [
            rule("4", "GitHub", &["Github"]),
            rule("abcd1234", "JavaScript", &["Javascript"]),
        ];
        let t = "<!-- kapi off: GitHub, abcd -->Github Javascript<!-- kapi on -->Github";
        assert_eq!(found(&r, t), ["1:65:Github"]);
    }

    #[test]
    fn suggested_and_advisory_do_not_fail() {
        let mut s = rule("1", "runtime", &["run time"]);
        s.suggested = true;
        let mut a = rule("2", "backend", &["back end"]);
        a.advisory = true;
        let m = Matcher::new(&[s, a]).unwrap();
        let f = m.check("a.txt", "run time back end", TextKind::Text);
        assert_eq!(f.len(), 2);
        assert!(f.iter().all(|f| !f.fails));
        assert_eq!(
            f[0].message,
            "Suggested rule about \"runtime\", not yet established: write \"runtime\", not \"run time\""
        );
        assert_eq!(f[1].severity, Severity::Warning);
    }

    #[test]
    fn a_matcher_scans_with_the_nfa_then_the_dfa_and_finds_the_same() {
        let rules = [rule("4", "GitHub", &["Github", "git hub"])];
        let m = Matcher::new(&rules).unwrap();
        let text = "Github and GIT HUB, GitHub.\n\n`git hub` in code.\n";
        let ac = m.automaton.as_ref().unwrap();
        let first = m.check("a.md", text, TextKind::Markdown);
        assert!(
            ac.dfa.get().is_none(),
            "one short page is scanned by the NFA"
        );
        let mut last = Vec::new();
        while ac.dfa.get().is_none() {
            last = m.check("a.md", text, TextKind::Markdown);
            assert_eq!(last, first);
        }
        assert!(ac.dfa.get().unwrap().is_some(), "then a DFA is built");
        assert_eq!(m.check("a.md", text, TextKind::Text).len(), 3);
        assert_eq!(m.check("a.md", text, TextKind::Markdown), first);
        assert_eq!(first.len(), 2);
        assert_eq!(last.len(), 2);
    }

    #[test]
    fn large_rule_sets_use_the_nfa_and_find_the_same() {
        let keys = |k: &str| {
            let mut keys = Keys::default();
            keys.push(k.as_bytes());
            keys
        };
        assert_eq!(kind_for(&keys("ab")), AhoCorasickKind::DFA);
        let long: Box<str> = "x".repeat(DFA_MAX_PATTERN_BYTES + 1).into();
        assert_eq!(kind_for(&keys(&long)), AhoCorasickKind::ContiguousNFA);
        let small = [rule("4", "GitHub", &["Github", "git hub"])];
        let mut large = small.to_vec();
        large.push(rule("5", "y", &[&*long]));
        let text = "Github and GIT HUB, GitHub.";
        assert_eq!(found(&small, text), found(&large, text));
        assert_eq!(found(&large, text), ["1:1:Github", "1:12:GIT HUB"]);
    }

    #[test]
    fn empty_rules_find_nothing() {
        assert!(found(&[], "Github").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn findings_are_true_spans_of_avoided_forms(t in "(?s)[a-zA-Z `<>\\[\\]()#/.\n-ÜüßSs]{0,120}") {
            let rules = [rule("1", "GitHub", &["Github", "git hub"]), rule("2", "Über", &["uber", "ÜBER-X"])];
            let m = Matcher::new(&rules).unwrap();
            for kind in [TextKind::Markdown, TextKind::Text] {
                for f in m.check("a", &t, kind) {
                    proptest::prop_assert_eq!(&t[f.start..f.end], f.matched.as_str());
                    proptest::prop_assert!(f.matched != f.preferred);
                    proptest::prop_assert!(f.line >= 1 && f.column >= 1);
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn scanning_markdown_before_parsing_finds_the_same(
            tokens in proptest::collection::vec(0usize..40, 0..40),
            seps in proptest::collection::vec(0usize..5, 40),
        ) {
            const TOKENS: [&str; 40] = [
                "back", "end", "Back-end", "back end", "start", "Start", "Github", "git", "hub",
                "Git-Hub", "_", "*", "**", "`", "``", "|", "~~", "<b>", "</b>", "[", "](x)", "][y]",
                "\n", "\n\n", "- ", "    ", "```\n", "# ", "> ", "\\", "<!-- vale off -->",
                "<!-- vale on -->", "https://x.y/", "{{< x >}}", "_https://x", "x_y", "--", "...",
                "www.", "[^1]",
            ];
            const SEPS: [&str; 5] = [" ", "", "-", "\t", "\n"];
            let mut t = String::new();
            for (i, k) in tokens.iter().enumerate() {
                t.push_str(TOKENS[*k]);
                t.push_str(SEPS[seps[i]]);
            }
            let mut exact = rule("3", "GitHub", &["Github", "git hub", "Git-Hub"]);
            exact.exact = true;
            let rules = [
                rule("1", "backend", &["back end", "Back-end"]),
                rule("2", "Start", &["start"]),
                exact,
            ];
            let m = Matcher::new(&rules).unwrap();
            proptest::prop_assert!(m.scan_first);
            let p = prose(&t, TextKind::Markdown);
            let full: Vec<Hit> = m.hits(&t, &p);
            let first = m.scanned_hits(&t, &loosened(&t), &TextKind::Markdown).map(|(_, h)| h).unwrap_or_default();
            let avoided = |h: &Vec<Hit>| h.iter().filter(|h| !h.preferred).copied().collect::<Vec<_>>();
            proptest::prop_assert_eq!(avoided(&full), avoided(&first));
        }
    }

    /// Plans kept in memory as the cache keeps them ([`Plan::to_bytes`]).
    #[derive(Default)]
    struct Memory(Vec<(PlanKey, Vec<u8>)>, usize);

    impl Plans for Memory {
        fn active(&self) -> bool {
            true
        }
        fn find(&mut self, key: &PlanKey) -> Option<Plan> {
            let (_, bytes) = self.0.iter().find(|(k, _)| k == key)?;
            self.1 += 1;
            Some(Plan::from_bytes(bytes).unwrap())
        }
        fn keep(&mut self, key: PlanKey, _: &[Arc<TermList>], plan: &Plan) {
            self.0.push((key, plan.to_bytes()));
        }
    }

    #[test]
    fn a_plan_is_keyed_by_everything_it_is_derived_from() {
        let key_of = |rules: &[TermRule], keep_all| Plan::key(&rules.to_vec().into(), keep_all);
        let a = [rule("1", "GitHub", &["Github", "git hub"])];
        let key = key_of(&a, false);
        assert_ne!(key, key_of(&a, true));
        let mut b = a.clone();
        b[0].exact = true;
        assert_ne!(key, key_of(&b, false));
        // Forms are length-prefixed: moving a character between two forms
        // is another key.
        let c = [rule("1", "GitHub", &["Githu", "bgit hub"])];
        assert_ne!(key, key_of(&c, false));
        let d = [rule("1", "GitHu", &["Github", "git hub"])];
        assert_ne!(key, key_of(&d, false));
        // What a plan is not derived from (the rule's id, its bounds) is
        // not in the key.
        assert_eq!(
            key,
            key_of(&[rule("other", "GitHub", &["Github", "git hub"])], false)
        );
    }

    #[test]
    fn a_plan_that_does_not_fit_its_rules_is_not_taken() {
        let rules = [
            rule("1", "GitHub", &["Github"]),
            rule("2", "Über", &["uber"]),
        ];
        let plan = Plan::new(&rules, false, select::SELECT_FROM);
        assert!(plan.fits(2, select::SELECT_FROM));
        assert!(!plan.fits(1, select::SELECT_FROM));
        let mut out_of_range = plan.clone();
        out_of_range.entries.set_rule(0, 7);
        assert!(!out_of_range.fits(2, select::SELECT_FROM));
        let mut short = plan.clone();
        short.keys.pop();
        assert!(!short.fits(2, select::SELECT_FROM));
        // A plan without a selector's tables serves no matcher that
        // selects, and one with them none that does not.
        assert!(!plan.fits(2, 0));
        let selecting = Plan::new(&rules, false, 0);
        assert!(selecting.fits(2, 0) && !selecting.fits(2, select::SELECT_FROM));
    }

    proptest::proptest! {
        #[test]
        fn a_kept_plan_finds_what_a_fresh_build_finds(
            rules in proptest::collection::vec(
                ("[a-cA-C]{1,3}( [a-c]{1,2})?", proptest::collection::vec("[a-cA-C]{1,3}([ -][a-cA-C]{1,2})?", 1..4), proptest::bool::ANY, proptest::bool::ANY),
                1..8),
            t in "[a-cA-C .\n-]{0,80}",
        ) {
            let rules: Vec<TermRule> = rules
                .iter()
                .enumerate()
                .map(|(i, (p, a, exact, raw))| {
                    let a: Vec<&str> = a.iter().map(String::as_str).collect();
                    let mut r = TermRule::listed("t", i + 1, p, &a);
                    r.exact = *exact;
                    r.raw = *raw;
                    r
                })
                .collect();
            let mut memory = Memory::default();
            let fresh = Matcher::with_plans(rules.clone(), &mut memory).unwrap();
            let kept = Matcher::with_plans(rules.clone(), &mut memory).unwrap();
            proptest::prop_assert!(memory.1 >= 1);
            let usage = Matcher::for_usage_with(rules.clone(), &mut memory).unwrap();
            let usage_kept = Matcher::for_usage_with(rules.clone(), &mut memory).unwrap();
            let plain = Matcher::new(&rules).unwrap();
            for kind in [TextKind::Markdown, TextKind::Text] {
                let want = format!("{:?}", plain.check("a", &t, kind));
                proptest::prop_assert_eq!(&format!("{:?}", fresh.check("a", &t, kind)), &want);
                proptest::prop_assert_eq!(&format!("{:?}", kept.check("a", &t, kind)), &want);
                proptest::prop_assert_eq!(
                    format!("{:?}", usage.check("a", &t, kind)),
                    format!("{:?}", usage_kept.check("a", &t, kind))
                );
            }
        }
    }

    #[test]
    fn folding_keeps_word_characters() {
        // A selector reads a text's words in its folded form, and boundaries
        // are judged in the text as written: both must agree on every
        // character.
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let folded = case_key_same_len(c.encode_utf8(&mut [0; 4]));
            let f = folded.chars().next().unwrap();
            assert_eq!(is_word(c), is_word(f), "{c:?} folds to {f:?}");
        }
    }

    #[test]
    fn a_plan_reads_back_only_as_written() {
        let mut exact = rule("2", "Über", &["uber", "ÜBER"]);
        exact.exact = true;
        let rules = [rule("1", "GitHub", &["Github", "git hub"]), exact];
        for select_from in [select::SELECT_FROM, 0] {
            let plan = Plan::new(&rules, true, select_from);
            assert_eq!(plan.select.is_some(), select_from == 0);
            let bytes = plan.to_bytes();
            assert_eq!(Plan::from_bytes(&bytes), Some(plan));
            for n in 0..bytes.len() {
                assert_eq!(Plan::from_bytes(&bytes[..n]), None, "cut at {n}");
            }
            let mut grown = bytes.clone();
            grown.push(0);
            assert_eq!(Plan::from_bytes(&grown), None);
            // A count past the bytes left: refused before anything is
            // allocated for it.
            let mut huge = vec![0xff, 0xff, 0xff, 0xff];
            huge.extend_from_slice(&bytes[4..]);
            assert_eq!(Plan::from_bytes(&huge), None);
            // Any one bit changed is refused or reads back as other valid
            // tables, never panics: nor does a matcher built from one that
            // fits its rules, checking a text that writes every form.
            let key = Plan::key(&rules.to_vec().into(), true);
            let text = "Github, git hub and GitHub; uber, ÜBER, Über and über.";
            for i in 0..bytes.len() {
                let mut flipped = bytes.clone();
                flipped[i] ^= 0x10;
                if let Some(p) = Plan::from_bytes(&flipped)
                    && p.fits(2, select_from)
                {
                    let mut kept = Memory(vec![(key, flipped)], 0);
                    let m =
                        Matcher::build(rules.to_vec().into(), true, true, &mut kept, select_from)
                            .unwrap();
                    assert_eq!(kept.1, 1, "the flipped plan is the one taken");
                    let _ = m.check("a.md", text, TextKind::Text);
                    let _ = crate::check::usage::count(&m, text, TextKind::Text);
                }
            }
        }
    }

    #[test]
    fn a_selector_scans_only_for_forms_whose_words_a_text_writes() {
        let mut anywhere = rule("3", "ab", &["a-b"]);
        anywhere.bounds = Bounds::None;
        let rules = [
            rule("1", "GitHub", &["Github", "zarvo github", "github zarvo"]),
            rule("2", "backend", &["back end", "back-end"]),
            anywhere,
            rule("4", "x", &["--"]),
        ];
        let m = Matcher::selecting_from(rules.to_vec().into(), &mut NoPlans, 0).unwrap();
        let s = m.select.as_ref().unwrap();
        let keys = |text: &str| {
            let mut k: Vec<&str> = s
                .candidates(text)
                .iter()
                .map(|&k| std::str::from_utf8(m.keys.get(k as usize)).unwrap())
                .collect();
            k.sort_unstable();
            k
        };
        // The form matched anywhere and the one without words always; the
        // others when every one of their words is a word of the text.
        assert_eq!(keys("nothing here"), ["--", "a-b"]);
        assert_eq!(
            keys("github and zarvo"),
            ["--", "a-b", "github", "github zarvo", "zarvo github"]
        );
        assert_eq!(
            keys("the back-end end"),
            ["--", "a-b", "back end", "back-end"]
        );
        assert_eq!(keys("githubs backend"), ["--", "a-b"]);
        assert_eq!(
            found(&rules, "Github, zarvo github; back-end xa-by --"),
            [
                "1:1:Github",
                "1:9:zarvo github",
                "1:23:back-end",
                "1:33:a-b",
                "1:38:--"
            ]
        );
        for text in [
            "Github, zarvo github; back-end xa-by --",
            "nothing",
            "back end",
        ] {
            assert_eq!(
                format!("{:?}", m.check("a.md", text, TextKind::Markdown)),
                format!(
                    "{:?}",
                    Matcher::new(&rules)
                        .unwrap()
                        .check("a.md", text, TextKind::Markdown)
                )
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn a_selecting_matcher_finds_what_one_automaton_finds(
            rules in proptest::collection::vec(
                (
                    "(ab|Cd|é|x_y|q)( (ab|cd|ÉF|x|q))?",
                    proptest::collection::vec("(ab|cD|éf|x_y|q|-)([ -](ab|cd|x|Q|\\.))?", 1..4),
                    0usize..3,
                    proptest::bool::ANY,
                    proptest::bool::ANY,
                ),
                1..10),
            texts in proptest::collection::vec(
                proptest::collection::vec(0usize..16, 0..30), 1..5),
        ) {
            const TOKENS: [&str; 16] = [
                "ab", "AB", "cd", "Cd", "éf", "ÉF", "x_y", "x", "y", "q", " ", "-", ".", "\n", "*", "`",
            ];
            let rules: Vec<TermRule> = rules
                .iter()
                .enumerate()
                .map(|(i, (p, a, bounds, exact, raw))| {
                    let a: Vec<&str> = a.iter().map(String::as_str).collect();
                    let mut r = TermRule::listed(if i % 3 == 0 { "u" } else { "t" }, i + 1, p, &a);
                    r.bounds = [Bounds::Words, Bounds::Regex, Bounds::None][*bounds];
                    r.exact = *exact;
                    r.raw = *raw;
                    r
                })
                .collect();
            let one = Matcher::new(&rules).unwrap();
            let selecting = Matcher::selecting_from(rules.clone().into(), &mut NoPlans, 0).unwrap();
            proptest::prop_assert!(selecting.select.is_some() || selecting.keys.is_empty());
            let counting = Matcher::for_usage(&rules).unwrap();
            let counting_selecting =
                Matcher::build(rules.clone().into(), true, true, &mut NoPlans, 0).unwrap();
            // One matcher checks every text in turn, as a tree is checked:
            // its automaton grows with the texts.
            for tokens in &texts {
                let t: String = tokens.iter().map(|&k| TOKENS[k]).collect();
                for kind in [TextKind::Markdown, TextKind::Text] {
                    proptest::prop_assert_eq!(
                        format!("{:?}", selecting.check("a", &t, kind)),
                        format!("{:?}", one.check("a", &t, kind))
                    );
                    proptest::prop_assert_eq!(
                        crate::check::usage::count(&counting_selecting, &t, kind),
                        crate::check::usage::count(&counting, &t, kind)
                    );
                }
            }
        }
    }

    #[test]
    fn a_match_never_spans_masked_text() {
        let r = [rule("1", "supertrait", &["super trait"])];
        assert!(found(&r, "the *super*trait here").is_empty());
        assert_eq!(found(&r, "a super trait"), ["1:3:super trait"]);
    }

    #[test]
    fn a_pattern_match_over_masked_markup_at_its_edges_keeps_the_text_between() {
        let o = "a *trait* -- this `c` -- y";
        let m: String = o
            .chars()
            .map(|c| if "*`c".contains(c) { ' ' } else { c })
            .collect();
        // `* -- ` from after `trait`: the emphasis delimiter is trimmed.
        assert_eq!(super::unmasked_core(o, &m, 8, 13), Some((9, 13)));
        assert_eq!(super::unmasked_core(o, &m, 3, 9), Some((3, 8)));
        // Over a code span (Vale's `*`s): none; masked text inside: none.
        assert_eq!(super::unmasked_core(o, &m, 17, 25), None);
        assert_eq!(super::unmasked_core(o, &m, 0, 9), None);
        assert_eq!(super::unmasked_core(o, &m, 10, 12), Some((10, 12)));
    }

    #[test]
    fn markup_in_a_form_scans_after_parsing() {
        assert!(
            !Matcher::new(&[rule("1", "C#", &["C #"]), rule("2", "x", &["a_b"])])
                .unwrap()
                .scan_first
        );
        assert!(
            Matcher::new(&[rule("1", "e.g.", &["eg"]), rule("2", "C#", &["c sharp"])])
                .unwrap()
                .scan_first
        );
    }

    fn overlapping_rules() -> Vec<TermRule> {
        vec![
            rule(
                "1",
                "Quickstart",
                &["Quick start", "quick-start", "QuickStart"],
            ),
            rule("2", "Start Guide", &["start-guide", "guide start"]),
            rule("3", "Grafana Alloy", &["Alloy"]),
            rule("4", "file system", &["filesystem"]),
            rule("5", "filesystem", &["file system", "File System"]),
            rule("6", "OpenTelemetry", &["opentelemetry", "Open Telemetry"]),
            rule("7", "end user", &["end-user", "End User", "user guide"]),
            rule("8", "Foo", &["foo"]),
            rule("9", "Foo Bar", &["foobar"]),
        ]
    }

    #[test]
    fn preferred_forms_that_cannot_compete_are_left_out() {
        let rules = overlapping_rules();
        let full = Matcher::for_usage(&rules).unwrap();
        let pruned = Matcher::new(&rules).unwrap();
        let count = |m: &Matcher| m.entries.all().filter(|e| e.preferred).count();
        // Quickstart, OpenTelemetry, Foo and Foo Bar are left out: only case
        // variants other than their text as written share their words.
        assert_eq!((count(&pruned), count(&full)), (5, 9));
        assert_eq!(
            // Rules 4 and 5 contradict each other: neither hides the
            // other's findings.
            found(
                &rules,
                "Grafana Alloy, Alloy, file system, filesystem, OPENTELEMETRY"
            ),
            ["1:16:Alloy", "1:23:file system", "1:36:filesystem"]
        );
    }

    proptest::proptest! {
        #[test]
        fn leaving_out_preferred_forms_changes_no_finding(
            tokens in proptest::collection::vec(0usize..27, 0..24),
            seps in proptest::collection::vec(0usize..4, 24),
        ) {
            const WORDS: [&str; 27] = [
                "foo", "Foo", "FOO", "bar", "BAR",
                "Quick", "quick", "start", "Start", "guide", "Guide", "Grafana", "Alloy", "alloy", "file",
                "system", "filesystem", "OpenTelemetry", "opentelemetry", "Open", "Telemetry", "end",
                "user", "End", "User", "QuickStart", "Quickstart",
            ];
            const SEPS: [&str; 4] = [" ", "-", ", ", "\n"];
            let mut text = String::new();
            for (i, t) in tokens.iter().enumerate() {
                text.push_str(WORDS[*t]);
                text.push_str(SEPS[seps[i]]);
            }
            let rules = overlapping_rules();
            let full = Matcher::build(rules.clone().into(), true, false, &mut NoPlans, select::SELECT_FROM).unwrap().check("a", &text, TextKind::Text);
            let pruned = Matcher::new(&rules).unwrap().check("a", &text, TextKind::Text);
            proptest::prop_assert_eq!(full, pruned);
        }
    }
}
