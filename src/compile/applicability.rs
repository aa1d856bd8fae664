//! Applicability: whether a permitted record is a current local decision
//! premise on the evaluation day, with fixed reason codes.
//!
//! This is a selection rule over permitted records, not semantic truth,
//! authenticated identity or execution permission.

use std::collections::HashMap;

use serde_json::{Value, json};
use time::Date;

use crate::vault::evidence::EvidenceState;
use crate::vault::{EvidenceRow, Kind, Note, Status, Vault, date, review};

/// The controlled state of one context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Applicable,
    NeedsReview,
    Reference,
    Unknown,
    NotDecision,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applicable => "applicable",
            Self::NeedsReview => "needs_review",
            Self::Reference => "reference",
            Self::Unknown => "unknown",
            Self::NotDecision => "not_decision",
        }
    }
}

/// The declared `valid_from` / `valid_until` half-open interval, judged on
/// the evaluation day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validity {
    pub state: &'static str,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applicability {
    pub state: State,
    pub local_approval: &'static str,
    pub validity: Validity,
    pub reasons: Vec<&'static str>,
}

impl Applicability {
    /// Only `applicable` is admitted as a current local decision premise.
    pub fn premise(&self) -> bool {
        self.state == State::Applicable
    }

    pub fn to_json(&self, as_of: &str) -> Value {
        json!({
            "as_of": as_of,
            "declared_validity": {
                "state": self.validity.state,
                "valid_from": self.validity.valid_from,
                "valid_until": self.validity.valid_until,
            },
            "local_approval": self.local_approval,
            "premise": self.premise(),
            "reasons": self.reasons,
            "state": self.state.as_str(),
        })
    }

    fn not_decision(reason: &'static str) -> Self {
        Self {
            state: State::NotDecision,
            local_approval: "not_applicable",
            validity: Validity {
                state: "not_applicable",
                valid_from: None,
                valid_until: None,
            },
            reasons: vec![reason],
        }
    }

    pub fn evidence() -> Self {
        Self::not_decision("kind.evidence")
    }
}

/// Indexes over the permitted view, built once per compilation.
pub struct Lookups<'v> {
    /// Note id to the indices of the permitted notes declaring it.
    pub ids: HashMap<&'v str, Vec<usize>>,
    /// Decision id to the indices of permitted decisions that supersede it.
    pub successors: HashMap<&'v str, Vec<usize>>,
    pub evidence: HashMap<&'v str, Vec<&'v EvidenceRow>>,
    /// Review rows per canonical note path, in visible append order.
    pub reviews: HashMap<&'v str, Vec<&'v review::Row>>,
    pub approvals_logged: HashMap<&'v str, bool>,
}

impl<'v> Lookups<'v> {
    pub fn new(vault: &'v Vault) -> Self {
        let mut ids: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut successors: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, note) in vault.notes.iter().enumerate() {
            if let Some(id) = &note.meta.id {
                ids.entry(id).or_default().push(i);
            }
            if note.meta.kind == Kind::Decision {
                for old in &note.meta.supersedes {
                    successors.entry(old).or_default().push(i);
                }
            }
        }
        let mut evidence: HashMap<&str, Vec<&EvidenceRow>> = HashMap::new();
        for row in &vault.evidence {
            evidence.entry(&row.id).or_default().push(row);
        }
        let mut reviews: HashMap<&str, Vec<&review::Row>> = HashMap::new();
        for row in &vault.reviews {
            reviews.entry(&row.target).or_default().push(row);
        }
        let mut approvals_logged = HashMap::new();
        for row in &vault.decision_events {
            if row.outcome == "approved" {
                approvals_logged.insert(row.target.as_str(), true);
            }
        }
        Self {
            ids,
            successors,
            evidence,
            reviews,
            approvals_logged,
        }
    }

    /// The unique permitted note with this id.
    pub fn note(&self, id: &str) -> Option<usize> {
        match self.ids.get(id).map(Vec::as_slice) {
            Some([one]) => Some(*one),
            _ => None,
        }
    }

    /// The controlling review of `path` on `today`: the latest date on or
    /// before it, later visible rows breaking ties.
    pub fn effective_review(&self, path: &str, today: &str) -> Option<&'v review::Row> {
        self.reviews
            .get(path)?
            .iter()
            .filter(|r| r.date.as_str() <= today)
            .max_by(|a, b| (a.date.as_str(), a.ordinal).cmp(&(b.date.as_str(), b.ordinal)))
            .copied()
    }
}

/// Judge the declared validity interval on `today`.
pub fn validity(note: &Note, today: Date) -> Validity {
    let (from, until) = (note.meta.valid_from.clone(), note.meta.valid_until.clone());
    let parsed_from = from.as_deref().map(date::parse);
    let parsed_until = until.as_deref().map(date::parse);
    let state = match (parsed_from, parsed_until) {
        (None, None) => "unknown",
        (Some(None), _) | (_, Some(None)) => "invalid",
        (Some(Some(f)), Some(Some(u))) if f >= u => "invalid",
        (Some(Some(f)), _) if today < f => "future",
        (_, Some(Some(u))) if today >= u => "expired",
        _ => "current",
    };
    Validity {
        state,
        valid_from: from,
        valid_until: until,
    }
}

/// Evaluate the note at `index` of the permitted view.
pub fn evaluate(vault: &Vault, lookups: &Lookups<'_>, index: usize, today: Date) -> Applicability {
    let note = &vault.notes[index];
    match note.meta.kind {
        Kind::Decision => {}
        Kind::Source => return Applicability::not_decision("kind.source"),
        Kind::Note => return Applicability::not_decision("kind.note"),
        _ => {
            return Applicability {
                state: State::Unknown,
                local_approval: "not_applicable",
                validity: Validity {
                    state: "unknown",
                    valid_from: None,
                    valid_until: None,
                },
                reasons: vec!["kind.unknown"],
            };
        }
    }
    let today_s = date::format(today);
    let mut reasons: Vec<&'static str> = Vec::new();
    // The state is that of the most severe reason: identity, then lifecycle
    // (reference material), then missing approval, then review problems.
    let mut worst = (0u8, State::Applicable);
    let mut worsen = |s: State, reason: &'static str, reasons: &mut Vec<&'static str>| {
        reasons.push(reason);
        let severity = match (s, reason) {
            (State::Unknown, r) if r.starts_with("identity.") => 5,
            (State::Unknown, "status.unknown") => 4,
            (State::Reference, _) => 3,
            (State::Unknown, _) => 2,
            _ => 1,
        };
        if severity > worst.0 {
            worst = (severity, s);
        }
    };
    match &note.meta.id {
        None => worsen(State::Unknown, "identity.missing", &mut reasons),
        Some(id) if lookups.note(id).is_none() => {
            worsen(State::Unknown, "identity.ambiguous", &mut reasons)
        }
        _ => {}
    }
    match note.meta.status {
        Status::Approved => {}
        Status::Draft => worsen(State::Reference, "status.draft", &mut reasons),
        Status::Proposed => worsen(State::Reference, "status.proposed", &mut reasons),
        Status::Superseded => worsen(State::Reference, "status.superseded", &mut reasons),
        Status::Archived => worsen(State::Reference, "status.archived", &mut reasons),
        Status::Unknown => worsen(State::Unknown, "status.unknown", &mut reasons),
    }
    if let Some(id) = &note.meta.id
        && lookups.successors.get(id.as_str()).is_some_and(|s| {
            s.iter()
                .any(|&i| vault.notes[i].meta.status == Status::Approved && i != index)
        })
    {
        worsen(State::Reference, "superseded_by.approved", &mut reasons);
    }
    let validity = validity(note, today);
    match validity.state {
        "invalid" => worsen(State::Reference, "validity.invalid", &mut reasons),
        "future" => worsen(State::Reference, "validity.future", &mut reasons),
        "expired" => worsen(State::Reference, "validity.expired", &mut reasons),
        "unknown" => reasons.push("validity.undeclared"),
        _ => {}
    }
    let local_approval = local_approval(note);
    match local_approval {
        "missing" => worsen(State::Unknown, "approval.missing", &mut reasons),
        "mismatch" => worsen(State::NeedsReview, "approval.mismatch", &mut reasons),
        _ => {}
    }
    if note.meta.madr {
        reasons.push("madr.mapped");
    }
    if vault.review_log.unavailable {
        worsen(State::NeedsReview, "review.unavailable", &mut reasons);
    }
    match lookups
        .effective_review(&note.path, &today_s)
        .map(|r| r.outcome.as_str())
    {
        Some("changes_requested") => {
            worsen(State::NeedsReview, "review.changes_requested", &mut reasons)
        }
        Some("rejected") => worsen(State::NeedsReview, "review.rejected", &mut reasons),
        _ => {}
    }
    for link in &note.meta.links {
        if crate::vault::evidence::is_evidence_id(&link.target) {
            match lookups
                .evidence
                .get(link.target.as_str())
                .map(Vec::as_slice)
            {
                None | Some([]) => worsen(State::NeedsReview, "evidence.unavailable", &mut reasons),
                Some([row]) => match row.state {
                    EvidenceState::Active => {}
                    EvidenceState::Retired => {
                        worsen(State::NeedsReview, "evidence.retired", &mut reasons)
                    }
                    EvidenceState::Replaced => {
                        worsen(State::NeedsReview, "evidence.replaced", &mut reasons)
                    }
                    EvidenceState::Unknown => {
                        worsen(State::NeedsReview, "evidence.unknown_state", &mut reasons)
                    }
                },
                Some(_) => worsen(State::NeedsReview, "evidence.ambiguous", &mut reasons),
            }
        } else if matches!(link.rel.as_str(), "source" | "depends_on" | "cites")
            && lookups.note(&link.target).is_none()
        {
            worsen(State::NeedsReview, "source.unavailable", &mut reasons);
        }
    }
    reasons.sort_unstable();
    reasons.dedup();
    Applicability {
        state: worst.1,
        local_approval,
        validity,
        reasons,
    }
}

/// `matched` when the receipt's SHA-256 equals the current body's.
pub fn local_approval(note: &Note) -> &'static str {
    match note
        .meta
        .approval
        .as_ref()
        .and_then(|a| a.sha256.as_deref())
    {
        None => "missing",
        Some(h) if h.eq_ignore_ascii_case(&super::digest::sha256_hex(note.body())) => "matched",
        Some(_) => "mismatch",
    }
}
