//! The evidence register: `E-NNN` rows with per-row sensitivity and an
//! active / retired / replaced state. Only the permitted row projection is
//! ever used; the register's raw bytes are withheld.

use std::collections::BTreeSet;

use serde_json::json;

use super::sensitivity::{Grant, Sensitivity};
use super::table::Table;
use crate::digest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceState {
    Active,
    Retired,
    Replaced,
    Unknown,
}

impl EvidenceState {
    fn parse(text: &str) -> Self {
        match text {
            "active" => Self::Active,
            "retired" => Self::Retired,
            "replaced" => Self::Replaced,
            _ => Self::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Retired => "retired",
            Self::Replaced => "replaced",
            Self::Unknown => "unknown",
        }
    }
}

/// One permitted evidence row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRow {
    pub id: String,
    /// The effective label: the higher of the register's and the row's.
    pub sensitivity: Sensitivity,
    pub state: EvidenceState,
    /// The replacement, when it is itself permitted.
    pub replaced_by: Option<String>,
    /// A replacement was declared but is not in the permitted view.
    pub replacement_unavailable: bool,
    pub title: String,
    pub url: String,
    pub summary: String,
    /// The register's path in the vault.
    pub register: String,
    /// SHA-256 of the row's canonical projection.
    pub sha256: String,
}

impl EvidenceRow {
    /// The canonical projection: the permitted cells, nothing else.
    pub(crate) fn projection(&self) -> serde_json::Value {
        json!({
            "id": self.id,
            "register": self.register,
            "replaced_by": self.replaced_by,
            "replacement_unavailable": self.replacement_unavailable,
            "sensitivity": self.sensitivity.as_str(),
            "state": self.state.as_str(),
            "summary": self.summary,
            "title": self.title,
            "url": self.url,
        })
    }

    /// The text a ranker and a context body see.
    pub(crate) fn text(&self) -> String {
        let mut t = self.title.clone();
        for part in [&self.summary, &self.url] {
            if !part.is_empty() {
                t.push('\n');
                t.push_str(part);
            }
        }
        t.push('\n');
        t
    }
}

/// Is `id` an evidence id, `E-` then digits?
pub(crate) fn is_evidence_id(id: &str) -> bool {
    id.strip_prefix("E-")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The permitted rows of one register whose floor is `floor`. Hidden rows
/// leave no trace: not their cells, positions or count. `replaced_by` holds
/// the declared replacement until [`resolve_replacements`] runs over all
/// registers.
pub fn project(
    table: &Table,
    floor: Sensitivity,
    register: &str,
    grant: &Grant,
    ids: Option<&BTreeSet<String>>,
) -> Vec<EvidenceRow> {
    let col = |name| table.column(name);
    let (Some(id_c), Some(state_c)) = (col("id"), col("state")) else {
        return Vec::new();
    };
    let cell = |row: &Vec<String>, c: Option<usize>| c.map(|c| row[c].clone()).unwrap_or_default();
    let label_c = col("sensitivity");
    let mut rows: Vec<(EvidenceRow, Option<String>)> = Vec::new();
    for row in &table.rows {
        let id = row[id_c].clone();
        if !is_evidence_id(&id) {
            continue;
        }
        let label = Sensitivity::of_row(floor, label_c.map(|c| row[c].as_str()));
        if !grant.permits(label) || ids.is_some_and(|ids| !ids.contains(&id)) {
            continue;
        }
        let replaced_by = Some(cell(row, col("replaced_by"))).filter(|r| !r.is_empty());
        let state = EvidenceState::parse(&row[state_c]);
        rows.push((
            EvidenceRow {
                id,
                sensitivity: label,
                state,
                replaced_by: None,
                replacement_unavailable: false,
                title: cell(row, col("title")),
                url: cell(row, col("url")),
                summary: cell(row, col("summary")),
                register: register.to_string(),
                sha256: String::new(),
            },
            replaced_by,
        ));
    }
    rows.into_iter()
        .map(|(mut r, replacement)| {
            r.replaced_by = replacement;
            r
        })
        .collect()
}

/// Resolve the declared replacements once every register is projected: a
/// replacement visible in any register is shown, one outside the permitted
/// view becomes `replacement_unavailable`. Then hash each row.
pub fn resolve_replacements(rows: Vec<EvidenceRow>) -> Vec<EvidenceRow> {
    let visible: BTreeSet<String> = rows.iter().map(|r| r.id.clone()).collect();
    rows.into_iter()
        .map(|mut r| {
            if let Some(rep) = r.replaced_by.take() {
                if visible.contains(&rep) {
                    r.replaced_by = Some(rep);
                } else {
                    r.replacement_unavailable = true;
                }
            }
            r.sha256 = digest::sha256_hex(&digest::canonical(&r.projection()));
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::table;

    #[test]
    fn hidden_rows_leave_no_trace() {
        let t = table::parse(
            "| id | sensitivity | state | replaced_by | title | url |\n|-|-|-|-|-|-|\n\
             | E-001 | public | replaced | E-002 | Old | u1 |\n\
             | E-002 | restricted | active | | Secret | u2 |\n\
             | E-003 | | active | | Unlabelled | u3 |\n\
             | E-004 | public | retired | | Gone | u4 |\n",
        );
        let rows = resolve_replacements(project(
            &t,
            Sensitivity::Public,
            "evidence.md",
            &Grant::public(),
            None,
        ));
        let ids: Vec<_> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["E-001", "E-004"]);
        assert_eq!(rows[0].replaced_by, None);
        assert!(rows[0].replacement_unavailable);
        let all = resolve_replacements(project(
            &t,
            Sensitivity::Public,
            "evidence.md",
            &Grant::up_to(Sensitivity::Restricted),
            None,
        ));
        assert_eq!(all.len(), 4);
        assert_eq!(all[0].replaced_by.as_deref(), Some("E-002"));
        // A caller's id scope narrows further, replacements included.
        let ids: BTreeSet<String> = ["E-001".to_string()].into();
        let grant = Grant::up_to(Sensitivity::Restricted);
        let scoped = resolve_replacements(project(
            &t,
            Sensitivity::Public,
            "evidence.md",
            &grant,
            Some(&ids),
        ));
        assert_eq!(scoped.len(), 1);
        assert!(scoped[0].replacement_unavailable);
        let internal = project(
            &t,
            Sensitivity::Internal,
            "evidence.md",
            &Grant::public(),
            None,
        );
        assert!(internal.is_empty());
    }
}
