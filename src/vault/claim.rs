//! Claim records (`type: claim`, format: `docs/vault.md`, "Claims").
//!
//! A claim is a permanent `restricted` note whose fenced ` ```claim `
//! payload (TOML) holds a statement, its quotes with byte anchors into a
//! capture, the E-IDs of its evidence and the capture it was taken from.
//! The payload is released only when every E-ID it names is in the caller's
//! filtered active/retired evidence view; only then are its capture
//! (`captures/<sha256>`, content-addressed) and its source's observation
//! ledger (`captures/<source>.observations.jsonl`) opened and hashed.
//! A malformed claim fails closed, naming the file and what is wrong.

use std::collections::HashMap;
use std::path::Path;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde::Deserialize;

use super::evidence::{EvidenceRow, EvidenceState, is_evidence_id};
use super::frontmatter;
use super::note::valid_id;
use crate::digest::sha256_hex;
use crate::fsutil::{self, FileError, Links};

/// The folder, under the vault root, of captures and observation ledgers.
pub const CAPTURES: &str = "captures";
/// At most this many E-IDs and quotes in one payload.
pub const MAX_EVIDENCE: usize = 64;
pub const MAX_QUOTES: usize = 256;
/// At most this many observations in one ledger.
pub const MAX_OBSERVATIONS: usize = 100_000;
/// The fenced block's info string.
const FENCE: &str = "claim";

/// The payload, as written in the fenced block.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    /// The statement the claim makes.
    pub claim: String,
    /// The E-IDs of its evidence (at least one).
    pub evidence: Vec<String>,
    /// The SHA-256 (hex) of the capture the quotes were taken from.
    pub capture: String,
    /// The observed source's name: its ledger is `captures/<source>.observations.jsonl`.
    pub source: String,
    #[serde(default)]
    pub quotes: Vec<Quote>,
}

/// A quotation and its byte anchors in the capture: `capture[start..end]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quote {
    pub text: String,
    pub start: u64,
    pub end: u64,
}

/// One line of an observation ledger: the day the source was seen and the
/// digest of what was seen.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub observed: String,
    pub sha256: String,
}

/// A released claim's bound sources.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The ledger's path relative to the vault root.
    pub ledger_path: String,
    /// SHA-256 of the ledger's raw bytes; `None` when there is no ledger.
    pub ledger_sha256: Option<String>,
    /// The observations, in ledger order.
    pub observations: Vec<Observation>,
}

/// A released claim: its payload and its bound sources.
#[derive(Debug, Clone)]
pub struct Claim {
    pub payload: Payload,
    pub sources: Sources,
}

/// A claim whose payload stays withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    pub path: String,
    pub id: Option<String>,
}

/// What is wrong with a claim or its sources. The path is the permitted
/// claim's own or one of its sources', which the caller may see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("malformed_claim: {path}: {problem}")]
    Malformed { path: String, problem: String },
    #[error("claim_source_corrupt: {path}: {problem}")]
    Source { path: String, problem: String },
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && crate::digest::is_lower_hex(s)
}

/// The capture's path for a digest.
pub fn capture_path(sha256: &str) -> String {
    format!("{CAPTURES}/{sha256}")
}

/// The ledger's path for a source name.
pub fn ledger_path(source: &str) -> String {
    format!("{CAPTURES}/{source}.observations.jsonl")
}

/// Parse and check a permitted claim note: canonical front matter (`id`,
/// `type: claim`, `sensitivity: restricted` as declared) and exactly one
/// fenced `claim` block holding a well-formed payload.
pub fn parse(path: &str, bytes: &[u8], body_offset: usize) -> Result<Payload, ClaimError> {
    let bad = |problem: &str| ClaimError::Malformed {
        path: path.to_string(),
        problem: problem.to_string(),
    };
    let fm = frontmatter::parse(bytes).map_err(|_| bad("its front matter cannot be read"))?;
    if fm.str("id").is_none_or(|id| !valid_id(id)) {
        return Err(bad("it has no valid `id`"));
    }
    if fm.str("sensitivity") != Some("restricted") {
        return Err(bad(
            "a claim must declare `sensitivity: restricted` (it is restricted whatever it declares)",
        ));
    }
    let body =
        std::str::from_utf8(&bytes[body_offset..]).map_err(|_| bad("its body is not UTF-8"))?;
    let mut blocks = Vec::new();
    let mut inside: Option<String> = None;
    for event in Parser::new(body) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))
                if info.split_whitespace().next() == Some(FENCE) =>
            {
                inside = Some(String::new());
            }
            Event::Text(t) => {
                if let Some(s) = inside.as_mut() {
                    s.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(s) = inside.take() {
                    blocks.push(s);
                }
            }
            _ => {}
        }
    }
    let text = match blocks.as_slice() {
        [one] => one,
        [] => return Err(bad("it has no fenced ```claim payload")),
        _ => return Err(bad("it has more than one fenced ```claim payload")),
    };
    let payload: Payload = toml::from_str(text).map_err(|e| {
        let first = e.message().lines().next().unwrap_or("").to_string();
        bad(&format!("its payload is not a claim payload: {first}"))
    })?;
    check(&payload).map_err(|p| bad(&p))?;
    Ok(payload)
}

fn check(p: &Payload) -> Result<(), String> {
    if p.claim.trim().is_empty() {
        return Err("the payload's `claim` is empty".into());
    }
    if p.evidence.is_empty() {
        return Err("the payload names no evidence (`evidence = [\"E-001\"]`)".into());
    }
    if p.evidence.len() > MAX_EVIDENCE {
        return Err(format!("more than {MAX_EVIDENCE} evidence ids"));
    }
    if let Some(e) = p.evidence.iter().find(|e| !is_evidence_id(e)) {
        return Err(format!("{e:?} in `evidence` is not an evidence id (E-NNN)"));
    }
    if !is_hex64(&p.capture) {
        return Err("`capture` is not a SHA-256 (64 lower-case hex digits)".into());
    }
    if !valid_id(&p.source) {
        return Err(format!(
            "`source` {:?} is not a source name (a letter, then letters, digits, `-`, `_`, `.`)",
            p.source
        ));
    }
    if p.quotes.len() > MAX_QUOTES {
        return Err(format!("more than {MAX_QUOTES} quotes"));
    }
    for (n, q) in p.quotes.iter().enumerate() {
        if q.text.is_empty() || q.end <= q.start || q.end - q.start != q.text.len() as u64 {
            return Err(format!(
                "quote {} has anchors that do not span its text (end - start must be its length in bytes)",
                n + 1
            ));
        }
    }
    Ok(())
}

/// Whether every E-ID the payload names is in the caller's filtered
/// evidence view: exactly one permitted row, `active` or `retired`.
pub fn releasable(payload: &Payload, evidence: &HashMap<&str, Vec<&EvidenceRow>>) -> bool {
    payload.evidence.iter().all(|id| {
        matches!(
            evidence.get(id.as_str()).map(Vec::as_slice),
            Some([row]) if matches!(row.state, EvidenceState::Active | EvidenceState::Retired)
        )
    })
}

/// Check a released claim's capture (present, a regular file, its bytes
/// hashing to its name) and read its source's ledger. Called only for a
/// released claim: nothing of a withheld one is opened.
pub fn bind_sources(root: &Path, payload: &Payload) -> Result<Sources, ClaimError> {
    let corrupt = |path: &str, problem: &str| ClaimError::Source {
        path: path.to_string(),
        problem: problem.to_string(),
    };
    // The capture's digest is its name, checked as it is read.
    drop(read_capture(root, &payload.capture)?);
    let ledger = ledger_path(&payload.source);
    let raw = match fsutil::read_optional(&root.join(&ledger), Links::Refuse) {
        Ok(raw) => raw,
        Err(FileError::TooLarge) => return Err(corrupt(&ledger, "the ledger exceeds 16 MiB")),
        Err(FileError::NotRegular(_)) => {
            return Err(corrupt(&ledger, "the ledger is not a regular file"));
        }
        Err(_) => return Err(corrupt(&ledger, "the ledger cannot be read")),
    };
    let Some(raw) = raw else {
        return Ok(Sources {
            ledger_path: ledger,
            ledger_sha256: None,
            observations: Vec::new(),
        });
    };
    let observations = parse_ledger(&raw).map_err(|p| corrupt(&ledger, &p))?;
    Ok(Sources {
        ledger_path: ledger,
        ledger_sha256: Some(sha256_hex(&raw)),
        observations,
    })
}

/// Read a capture and check that its bytes hash to its name.
pub fn read_capture(root: &Path, sha256: &str) -> Result<Vec<u8>, ClaimError> {
    let path = capture_path(sha256);
    let corrupt = |problem: &str| ClaimError::Source {
        path: path.clone(),
        problem: problem.to_string(),
    };
    let bytes = fsutil::read_capped(&root.join(&path), Links::Refuse).map_err(|e| match e {
        FileError::TooLarge => corrupt("the capture exceeds 16 MiB"),
        FileError::NotRegular(_) => corrupt("the capture is not a regular file"),
        e if e.is_not_found() => corrupt("the capture the claim names is not there"),
        _ => corrupt("the capture cannot be read"),
    })?;
    if sha256_hex(&bytes) != sha256 {
        return Err(corrupt(
            "the capture's bytes do not hash to its name (it was changed in place)",
        ));
    }
    Ok(bytes)
}

/// An observation ledger: JSON Lines, one `{"observed": "YYYY-MM-DD",
/// "sha256": HEX}` per line, nothing else.
pub fn parse_ledger(raw: &[u8]) -> Result<Vec<Observation>, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "the ledger is not UTF-8".to_string())?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if out.len() >= MAX_OBSERVATIONS {
            return Err(format!("more than {MAX_OBSERVATIONS} observations"));
        }
        let o: Observation = serde_json::from_str(line)
            .map_err(|e| format!("line {}: not an observation ({e})", n + 1))?;
        if super::date::parse(&o.observed).is_none() {
            return Err(format!(
                "line {}: `observed` is not a YYYY-MM-DD date",
                n + 1
            ));
        }
        if !is_hex64(&o.sha256) {
            return Err(format!("line {}: `sha256` is not a SHA-256", n + 1));
        }
        out.push(o);
    }
    Ok(out)
}

/// How a claim's pinned capture stands against its ledger on `as_of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Observed {
    /// The source was last seen (on or before `as_of`) with another digest.
    Changed,
    /// Nothing on or before `as_of` shows the pinned capture was seen.
    Unknown,
    /// The last day the source was seen, it was seen with several digests.
    Ambiguous,
    /// The ledger holds observations dated after `as_of`.
    Future,
}

impl Observed {
    pub fn code(self) -> &'static str {
        match self {
            Self::Changed => "compiled.source_observation_changed",
            Self::Unknown => "compiled.source_observation_unknown",
            Self::Ambiguous => "compiled.source_observation_ambiguous",
            Self::Future => "compiled.source_observation_future",
        }
    }
}

/// The warnings that apply to a claim on `as_of` (a `YYYY-MM-DD` day, so
/// days compare as text).
pub fn observed(claim: &Claim, as_of: &str) -> Vec<Observed> {
    let obs = &claim.sources.observations;
    let mut out = Vec::new();
    if obs.iter().any(|o| o.observed.as_str() > as_of) {
        out.push(Observed::Future);
    }
    let seen: Vec<&Observation> = obs
        .iter()
        .filter(|o| o.observed.as_str() <= as_of)
        .collect();
    if !seen.iter().any(|o| o.sha256 == claim.payload.capture) {
        out.push(Observed::Unknown);
    }
    if let Some(last) = seen.iter().map(|o| o.observed.as_str()).max() {
        let mut digests: Vec<&str> = seen
            .iter()
            .filter(|o| o.observed == last)
            .map(|o| o.sha256.as_str())
            .collect();
        digests.sort_unstable();
        digests.dedup();
        match digests.as_slice() {
            [one] if *one != claim.payload.capture => out.push(Observed::Changed),
            [_] => {}
            _ => out.push(Observed::Ambiguous),
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: &str = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";

    fn note(label: &str, payload: &str) -> String {
        format!(
            "---\nid: C-001\ntype: claim\nsensitivity: {label}\n---\nProse.\n\n```claim\n{payload}```\n"
        )
    }

    fn good() -> String {
        format!(
            "claim = \"x\"\nevidence = [\"E-001\"]\ncapture = \"{CAP}\"\nsource = \"site\"\n[[quotes]]\ntext = \"foo\"\nstart = 0\nend = 3\n"
        )
    }

    fn parse_text(text: &str) -> Result<Payload, ClaimError> {
        let fm = frontmatter::parse(text.as_bytes()).unwrap();
        parse("c.md", text.as_bytes(), fm.body_offset)
    }

    #[test]
    fn a_canonical_claim_parses() {
        let p = parse_text(&note("restricted", &good())).unwrap();
        assert_eq!(p.evidence, ["E-001"]);
        assert_eq!(p.quotes[0].end, 3);
    }

    #[test]
    fn malformed_claims_say_what_is_wrong() {
        let cases = [
            (note("public", &good()), "sensitivity: restricted"),
            (
                note("restricted", &good().replace("[\"E-001\"]", "[]")),
                "names no evidence",
            ),
            (
                note("restricted", &good().replace("E-001", "X-1")),
                "not an evidence id",
            ),
            (
                note("restricted", &good().replace(CAP, "abc")),
                "not a SHA-256",
            ),
            (
                note("restricted", &format!("{}extra = 1\n", good())),
                "not a claim payload",
            ),
            (
                note("restricted", &good().replace("end = 3", "end = 4")),
                "anchors",
            ),
            (
                "---\nid: C-001\ntype: claim\nsensitivity: restricted\n---\nno payload\n".into(),
                "no fenced",
            ),
            (
                format!("{}\n```claim\n{}```\n", note("restricted", &good()), good()),
                "more than one",
            ),
        ];
        for (text, want) in cases {
            let err = parse_text(&text).unwrap_err().to_string();
            assert!(err.starts_with("malformed_claim: c.md: "), "{err}");
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    fn claim(obs: &[(&str, &str)]) -> Claim {
        let payload = parse_text(&note("restricted", &good())).unwrap();
        Claim {
            payload,
            sources: Sources {
                ledger_path: String::new(),
                ledger_sha256: None,
                observations: obs
                    .iter()
                    .map(|(d, h)| Observation {
                        observed: d.to_string(),
                        sha256: h.to_string(),
                    })
                    .collect(),
            },
        }
    }

    #[test]
    fn observation_states() {
        let other = "1".repeat(64);
        let day = "2026-06-01";
        assert_eq!(observed(&claim(&[("2026-01-01", CAP)]), day), []);
        assert_eq!(observed(&claim(&[]), day), [Observed::Unknown]);
        assert_eq!(
            observed(&claim(&[("2026-01-01", CAP), ("2026-02-01", &other)]), day),
            [Observed::Changed]
        );
        // A -> B -> A: back to the pinned bytes, nothing to warn about.
        assert_eq!(
            observed(
                &claim(&[
                    ("2026-01-01", CAP),
                    ("2026-02-01", &other),
                    ("2026-03-01", CAP)
                ]),
                day
            ),
            []
        );
        assert_eq!(
            observed(&claim(&[("2026-01-01", CAP), ("2026-01-01", &other)]), day),
            [Observed::Ambiguous]
        );
        assert_eq!(
            observed(&claim(&[("2026-01-01", CAP), ("2027-01-01", &other)]), day),
            [Observed::Future]
        );
        assert_eq!(
            observed(&claim(&[("2027-01-01", CAP)]), day),
            [Observed::Unknown, Observed::Future]
        );
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(text in "[\\[\\]a-z0-9=\"{}:,. \n-]{0,200}") {
            let _ = parse_ledger(text.as_bytes());
            let note = format!("---\nid: C-1\ntype: claim\nsensitivity: restricted\n---\n```claim\n{text}\n```\n");
            let fm = frontmatter::parse(note.as_bytes()).unwrap();
            let _ = parse("c.md", note.as_bytes(), fm.body_offset);
        }
    }

    #[test]
    fn ledgers_are_strict_json_lines() {
        let line = format!("{{\"observed\":\"2026-01-01\",\"sha256\":\"{CAP}\"}}\n");
        assert_eq!(parse_ledger(line.as_bytes()).unwrap().len(), 1);
        for bad in [
            "{\"observed\":\"2026-01-01\"}".to_string(),
            line.replace("2026-01-01", "yesterday"),
            line.replace(CAP, "zz"),
            line.replace("}", ",\"by\":\"x\"}"),
            "not json".into(),
        ] {
            assert!(parse_ledger(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
