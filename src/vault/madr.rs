//! Reading MADR-style ADRs (front matter with `status` and `date`, no
//! `type`), so a team with existing records can start.
//!
//! | MADR | kapi |
//! |---|---|
//! | file `NNNN-title.md` | id `ADR-NNNN` |
//! | `title`, else the first `# ` heading | title |
//! | `status: proposed` | proposed |
//! | `status: accepted` | approved (no receipt: approval `missing`) |
//! | `status: rejected` / `deprecated` | archived |
//! | `status: superseded by ...` | superseded |
//! | `date` | created |
//! | `sensitivity` (missing: restricted) | sensitivity |

use super::frontmatter::FrontMatter;
use super::meta::{Kind, Meta, Status};
use super::sensitivity::Sensitivity;

pub fn map(fm: &FrontMatter, file_name: &str, sensitivity: Sensitivity) -> Meta {
    let digits: String = file_name.chars().take_while(char::is_ascii_digit).collect();
    let id = (!digits.is_empty() && digits.len() <= 8).then(|| format!("ADR-{digits}"));
    let status = fm.str("status").unwrap_or_default().to_ascii_lowercase();
    let status = match status.as_str() {
        "proposed" => Status::Proposed,
        "accepted" => Status::Approved,
        "rejected" | "deprecated" => Status::Archived,
        s if s.starts_with("superseded") => Status::Superseded,
        _ => Status::Unknown,
    };
    Meta {
        kind: Kind::Decision,
        sensitivity,
        id,
        title: fm.str("title").map(str::to_string),
        status,
        created: fm.str("date").map(str::to_string),
        valid_from: None,
        valid_until: None,
        supersedes: fm.list("supersedes"),
        approval: None,
        links: Vec::new(),
        madr: true,
    }
}

/// The first `# ` heading of a body, used as a MADR record's title.
pub fn first_heading(body: &str) -> Option<&str> {
    body.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::frontmatter;

    #[test]
    fn maps_madr() {
        let fm = frontmatter::parse(
            b"---\nstatus: accepted\ndate: 2026-01-02\nsensitivity: public\n---\n# Use X\n",
        )
        .unwrap();
        let m = Meta::from_front_matter(&fm, "0007-use-x.md");
        assert!(m.madr);
        assert_eq!(m.id.as_deref(), Some("ADR-0007"));
        assert_eq!(m.status, Status::Approved);
        assert_eq!(m.created.as_deref(), Some("2026-01-02"));
        assert_eq!(first_heading("intro\n# Use X\n"), Some("Use X"));
        let fm =
            frontmatter::parse(b"---\nstatus: superseded by ADR-0009\ndate: 2026-01-02\n---\n")
                .unwrap();
        let m = Meta::from_front_matter(&fm, "0008-y.md");
        assert_eq!(m.status, Status::Superseded);
        assert_eq!(m.sensitivity, Sensitivity::Restricted);
    }
}
