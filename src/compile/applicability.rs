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
    /// Decision-log rows per canonical note path, in visible append order.
    pub events: HashMap<&'v str, Vec<&'v review::Row>>,
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
        let mut events: HashMap<&str, Vec<&review::Row>> = HashMap::new();
        for row in &vault.decision_events {
            events.entry(&row.target).or_default().push(row);
        }
        Self {
            ids,
            successors,
            evidence,
            reviews,
            events,
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
        effective(self.reviews.get(path)?, today)
    }

    /// Whether the decision log's effective event for `path` on `today`
    /// (the latest dated on or before it, later rows breaking ties) is an
    /// approval. A later `reopened`, `superseded` or `archived` event, or
    /// an approval dated after `today`, does not count.
    pub fn approval_logged(&self, path: &str, today: &str) -> bool {
        self.events
            .get(path)
            .and_then(|rows| effective(rows, today))
            .is_some_and(|r| r.outcome == "approved")
    }
}

/// The latest row dated on or before `today`, later visible rows breaking ties.
fn effective<'v>(rows: &[&'v review::Row], today: &str) -> Option<&'v review::Row> {
    rows.iter()
        .filter(|r| r.date.as_str() <= today)
        .max_by(|a, b| (a.date.as_str(), a.ordinal).cmp(&(b.date.as_str(), b.ordinal)))
        .copied()
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
    evaluate_with(vault, lookups, index, today, true)
}

/// `successors`: whether to look at the decisions superseding this one.
/// A successor is judged with `successors: false`, which bounds the
/// recursion to one level and so cannot cycle.
fn evaluate_with(
    vault: &Vault,
    lookups: &Lookups<'_>,
    index: usize,
    today: Date,
    successors: bool,
) -> Applicability {
    let note = &vault.notes[index];
    match note.meta.kind {
        Kind::Decision => {}
        Kind::Source => return Applicability::not_decision("kind.source"),
        Kind::Note => return Applicability::not_decision("kind.note"),
        Kind::Claim => return Applicability::not_decision("kind.claim"),
        // A type kapi does not know (or unreadable front matter): a
        // document that is not a governing decision.
        _ => return Applicability::not_decision("kind.unknown"),
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
    // A successor supersedes only once it would itself be a current
    // premise (approval matched and in the past, validity current, no
    // review or input problem), not merely because it declares `approved`.
    if successors
        && let Some(id) = &note.meta.id
        && let Some(later) = lookups.successors.get(id.as_str())
    {
        let declared: Vec<usize> = later
            .iter()
            .copied()
            .filter(|&i| i != index && vault.notes[i].meta.status == Status::Approved)
            .collect();
        if declared
            .iter()
            .any(|&i| evaluate_with(vault, lookups, i, today, false).premise())
        {
            worsen(State::Reference, "superseded_by.approved", &mut reasons);
        } else if !declared.is_empty() {
            // Informational: a declared successor has not taken effect.
            reasons.push("superseded_by.pending");
        }
    }
    let validity = validity(note, today);
    match validity.state {
        "invalid" => worsen(State::Reference, "validity.invalid", &mut reasons),
        "future" => worsen(State::Reference, "validity.future", &mut reasons),
        "expired" => worsen(State::Reference, "validity.expired", &mut reasons),
        "unknown" => reasons.push("validity.undeclared"),
        _ => {}
    }
    let local_approval = local_approval(note, today);
    match local_approval {
        "missing" => worsen(State::Unknown, "approval.missing", &mut reasons),
        "future" => worsen(State::Reference, "approval.future", &mut reasons),
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

/// `matched` when the receipt's SHA-256 equals the current body's and its
/// `on` date is not after `today`; `future` when it matches but is dated
/// after `today` (a future approval is not yet an approval).
pub fn local_approval(note: &Note, today: Date) -> &'static str {
    let Some(approval) = note.meta.approval.as_ref() else {
        return "missing";
    };
    match approval.sha256.as_deref() {
        None => "missing",
        Some(h) if h.eq_ignore_ascii_case(&crate::digest::sha256_hex(note.body())) => {
            let on = approval.on.as_deref().and_then(date::parse);
            if on.is_some_and(|on| on > today) {
                "future"
            } else {
                "matched"
            }
        }
        Some(_) => "mismatch",
    }
}
