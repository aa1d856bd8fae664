//! The review log and the decision log: dated rows per target note, each
//! with its own sensitivity. Only permitted rows whose target is the
//! canonical relative path of a permitted note are kept, before any count,
//! ordinal or hash; short aliases are never resolved.

use std::collections::{BTreeSet, HashMap};

use serde_json::json;

use super::date;
use super::sensitivity::{Grant, Sensitivity};
use super::table::Table;
use crate::digest;

/// The review outcomes the log may record.
pub const OUTCOMES: [&str; 3] = ["confirmed", "changes_requested", "rejected"];
/// The decision-log events.
pub const EVENTS: [&str; 5] = ["proposed", "approved", "superseded", "archived", "reopened"];

/// One permitted row of the review log or the decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub date: String,
    /// The target note's canonical path, relative to the vault root.
    pub target: String,
    /// The outcome (review log) or event (decision log).
    pub outcome: String,
    /// Visible append order across the logs of this kind, from 0.
    pub ordinal: usize,
    /// SHA-256 of the canonical projection of the selected cells.
    pub sha256: String,
    /// 1 for the first visible row with these cells, 2 for a duplicate, ...
    pub occurrence: usize,
}

impl Row {
    pub(crate) fn projection(&self) -> serde_json::Value {
        json!({ "date": self.date, "outcome": self.outcome, "target": self.target })
    }
}

/// A permitted row before the ordinal and hash are assigned.
#[derive(Debug, Clone)]
pub struct Pending {
    pub date: String,
    pub target: String,
    pub outcome: String,
}

/// The permitted, supported rows of one log whose floor is `floor`.
/// `column` names the outcome column (`outcome` or `event`).
pub fn select(
    table: &Table,
    floor: Sensitivity,
    grant: &Grant,
    column: &str,
    allowed: &[&str],
    notes: &BTreeSet<String>,
) -> Vec<Pending> {
    let (Some(date_c), Some(target_c), Some(out_c)) = (
        table.column("date"),
        table.column("target"),
        table.column(column),
    ) else {
        return Vec::new();
    };
    let label_c = table.column("sensitivity");
    table
        .rows
        .iter()
        .filter(|row| grant.permits(Sensitivity::of_row(floor, label_c.map(|c| row[c].as_str()))))
        .filter(|row| date::parse(&row[date_c]).is_some())
        .filter(|row| allowed.contains(&row[out_c].as_str()))
        .filter(|row| notes.contains(&row[target_c]))
        .map(|row| Pending {
            date: row[date_c].clone(),
            target: row[target_c].clone(),
            outcome: row[out_c].clone(),
        })
        .collect()
}

/// Assign visible ordinals, row hashes and duplicate occurrences.
pub fn finish(pending: Vec<Pending>) -> Vec<Row> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    pending
        .into_iter()
        .enumerate()
        .map(|(ordinal, p)| {
            let mut row = Row {
                date: p.date,
                target: p.target,
                outcome: p.outcome,
                ordinal,
                sha256: String::new(),
                occurrence: 0,
            };
            row.sha256 = digest::sha256_hex(&digest::canonical(&row.projection()));
            let n = seen.entry(row.sha256.clone()).or_insert(0);
            *n += 1;
            row.occurrence = *n;
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::table;

    #[test]
    fn keeps_permitted_canonical_rows() {
        let t = table::parse(
            "| date | target | outcome | sensitivity | reviewer |\n|-|-|-|-|-|\n\
             | 2026-01-01 | d1.md | confirmed | public | Ana |\n\
             | 2026-01-02 | d1.md | rejected | restricted | Bo |\n\
             | 2026-01-03 | D-001 | rejected | public | alias |\n\
             | 2026-01-04 | d1.md | maybe | public | odd |\n\
             | 2026-01-01 | d1.md | confirmed | public | again |\n",
        );
        let notes: BTreeSet<String> = ["d1.md".to_string()].into();
        let rows = finish(select(
            &t,
            Sensitivity::Public,
            &Grant::public(),
            "outcome",
            &OUTCOMES,
            &notes,
        ));
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].ordinal, rows[0].occurrence), (0, 1));
        assert_eq!((rows[1].ordinal, rows[1].occurrence), (1, 2));
        assert_eq!(rows[0].sha256, rows[1].sha256);
    }
}
