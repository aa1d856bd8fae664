//! A note: one Markdown file with front matter, classified by kind. Its
//! front matter is read into [`Meta`] here: kapi's own fields, or a MADR
//! record's (`madr.rs`), told apart by what it declares.

use super::frontmatter::{FrontMatter, Value};
use super::madr;
use super::meta::{Approval, Kind, Link, Status};
use super::sensitivity::Sensitivity;

/// The metadata a note's front matter declares (`vault::note::Meta` is
/// the path the fuzz target and the corpus test read notes through).
pub use super::meta::Meta;

impl Meta {
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
        let mut links: Vec<Link> = Vec::new();
        for item in fm.items("links") {
            match item {
                // `- cites: E-001`: a mapping item, one link per entry.
                Value::Map(m) => links.extend(m.iter().filter_map(|(rel, t)| link(rel, t))),
                // `- "cites: E-001"`: a quoted item in the same form.
                Value::Str(s) => links.extend(parse_link(s)),
                Value::List(_) => {}
            }
        }
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
    link(rel, target)
}

/// A link of relation `rel` (lower-case letters and `_`) to the id `target`.
fn link(rel: &str, target: &str) -> Option<Link> {
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
