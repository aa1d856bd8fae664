//! What a note is, whichever front matter declared it (kapi's own, read
//! in `note.rs`, or a MADR record's, in `madr.rs`): its kind, a decision's
//! status, the approval receipt, typed links.

use super::sensitivity::Sensitivity;

/// What a file is. Logs and registers are read only through their permitted
/// row projections; their raw bytes never enter ranking, bodies or hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Decision,
    Source,
    Note,
    /// A claim record: restricted, its payload released only with its evidence.
    Claim,
    EvidenceRegister,
    ReviewLog,
    DecisionLog,
    /// Front matter that cannot be read or a type kapi does not know.
    Unknown,
}

impl Kind {
    pub fn parse(text: &str) -> Self {
        match text {
            "decision" => Self::Decision,
            "source" => Self::Source,
            "note" => Self::Note,
            "claim" => Self::Claim,
            "evidence_register" => Self::EvidenceRegister,
            "review_log" => Self::ReviewLog,
            "decision_log" => Self::DecisionLog,
            _ => Self::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decision => "decision",
            Self::Source => "source",
            Self::Note => "note",
            Self::Claim => "claim",
            Self::EvidenceRegister => "evidence_register",
            Self::ReviewLog => "review_log",
            Self::DecisionLog => "decision_log",
            Self::Unknown => "unknown",
        }
    }

    /// A raw mixed-label log or register.
    pub(crate) fn is_log(self) -> bool {
        matches!(
            self,
            Self::EvidenceRegister | Self::ReviewLog | Self::DecisionLog
        )
    }
}

/// A decision's lifecycle status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Draft,
    Proposed,
    Approved,
    Superseded,
    Archived,
    /// Missing or not one of the five.
    Unknown,
}

impl Status {
    pub fn parse(text: Option<&str>) -> Self {
        match text {
            Some("draft") => Self::Draft,
            Some("proposed") => Self::Proposed,
            Some("approved") => Self::Approved,
            Some("superseded") => Self::Superseded,
            Some("archived") => Self::Archived,
            _ => Self::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Proposed => "proposed",
            Self::Approved => "approved",
            Self::Superseded => "superseded",
            Self::Archived => "archived",
            Self::Unknown => "unknown",
        }
    }
}

/// The approval receipt: who approved, when, and the SHA-256 of the body
/// bytes they approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub by: Option<String>,
    pub on: Option<String>,
    pub sha256: Option<String>,
}

/// A typed link `rel: target` from the `links` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub rel: String,
    pub target: String,
}

/// The metadata of one note, as declared in its front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub sensitivity: Sensitivity,
    pub id: Option<String>,
    pub title: Option<String>,
    pub status: Status,
    pub created: Option<String>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub supersedes: Vec<String>,
    pub approval: Option<Approval>,
    pub links: Vec<Link>,
    /// Read from a MADR-style ADR (`status` and `date`, no `type`).
    pub madr: bool,
}

impl Meta {
    /// The fail-closed classification of a file whose front matter could
    /// not be read.
    pub fn unreadable() -> Self {
        Self {
            kind: Kind::Unknown,
            sensitivity: Sensitivity::Restricted,
            id: None,
            title: None,
            status: Status::Unknown,
            created: None,
            valid_from: None,
            valid_until: None,
            supersedes: Vec::new(),
            approval: None,
            links: Vec::new(),
            madr: false,
        }
    }
}
