//! A note: one Markdown file with front matter, classified by kind.

use super::frontmatter::FrontMatter;
use super::madr;
use super::sensitivity::Sensitivity;

/// What a file is. Logs and registers are read only through their permitted
/// row projections; their raw bytes never enter ranking, bodies or hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Decision,
    Source,
    Note,
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
            Self::EvidenceRegister => "evidence_register",
            Self::ReviewLog => "review_log",
            Self::DecisionLog => "decision_log",
            Self::Unknown => "unknown",
        }
    }

    /// A raw mixed-label log or register.
    pub fn is_log(self) -> bool {
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

    /// Map front matter to metadata. `file_name` is used by the MADR mapping.
    pub fn from_front_matter(fm: &FrontMatter, file_name: &str) -> Self {
        let mut sensitivity = Sensitivity::classify(fm.str("sensitivity"));
        if fm.str("type") == Some("claim") {
            // Claims can hold captured source quotations: a permanent
            // restricted floor, until the claim ledger arrives.
            sensitivity = Sensitivity::Restricted;
        }
        if fm.str("type").is_none() && fm.str("id").is_none() && fm.str("status").is_some() {
            return madr::map(fm, file_name, sensitivity);
        }
        let kind = fm.str("type").map_or(Kind::Unknown, Kind::parse);
        let id = fm.str("id").filter(|id| valid_id(id)).map(str::to_string);
        let approval = fm.map("approval").map(|m| Approval {
            by: m.get("by").filter(|s| !s.is_empty()).cloned(),
            on: m.get("on").filter(|s| !s.is_empty()).cloned(),
            sha256: m.get("sha256").filter(|s| !s.is_empty()).cloned(),
        });
        let mut links: Vec<Link> = fm
            .list("links")
            .iter()
            .filter_map(|item| parse_link(item))
            .collect();
        for e in fm.list("evidence") {
            links.push(Link {
                rel: "cites".into(),
                target: e,
            });
        }
        Self {
            kind,
            sensitivity,
            id,
            title: fm.str("title").map(str::to_string),
            status: if kind == Kind::Decision {
                Status::parse(fm.str("status"))
            } else {
                Status::Unknown
            },
            created: fm.str("created").map(str::to_string),
            valid_from: fm.str("valid_from").map(str::to_string),
            valid_until: fm.str("valid_until").map(str::to_string),
            supersedes: fm.list("supersedes"),
            approval,
            links,
            madr: false,
        }
    }
}

/// An id: a letter, then up to 63 letters, digits, `-`, `_` or `.`.
pub fn valid_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic())
        && id.len() <= 64
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn parse_link(item: &str) -> Option<Link> {
    let (rel, target) = item.split_once(':')?;
    let (rel, target) = (rel.trim(), target.trim());
    let rel_ok = !rel.is_empty() && rel.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    (rel_ok && valid_id(target)).then(|| Link {
        rel: rel.to_string(),
        target: target.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::frontmatter;

    #[test]
    fn maps_front_matter() {
        let text = "---\nid: D-001\ntype: decision\ntitle: T\nstatus: approved\nsensitivity: public\nsupersedes: D-000\nlinks:\n  - source: S-001\n  - bogus\nevidence: [E-001]\napproval:\n  by: Ana\n  sha256: ab\n---\n";
        let fm = frontmatter::parse(text.as_bytes()).unwrap();
        let m = Meta::from_front_matter(&fm, "D-001.md");
        assert_eq!(m.kind, Kind::Decision);
        assert_eq!(m.status, Status::Approved);
        assert_eq!(m.sensitivity, Sensitivity::Public);
        assert_eq!(m.supersedes, ["D-000"]);
        assert_eq!(m.links.len(), 2);
        assert_eq!(
            m.links[1],
            Link {
                rel: "cites".into(),
                target: "E-001".into()
            }
        );
        assert_eq!(m.approval.unwrap().sha256.as_deref(), Some("ab"));
    }

    #[test]
    fn claims_are_restricted() {
        let fm =
            frontmatter::parse(b"---\nid: C-1\ntype: claim\nsensitivity: public\n---\n").unwrap();
        assert_eq!(
            Meta::from_front_matter(&fm, "c.md").sensitivity,
            Sensitivity::Restricted
        );
    }

    #[test]
    fn ids() {
        assert!(valid_id("D-001"));
        assert!(valid_id("ADR-0001"));
        assert!(!valid_id("1abc"));
        assert!(!valid_id("a b"));
    }
}
