//! Bounded history references for one context: permitted supersedes and
//! superseded_by references and review events. History is untrusted
//! declared process data; it cannot authorize anything.

use serde_json::{Value, json};

use super::applicability::Lookups;
use crate::vault::{Kind, Vault};

/// At most this many entries in each relation list.
pub const MAX_HISTORY: usize = 8;

/// The history of the note at `index` on `today` (`YYYY-MM-DD`).
pub fn history(vault: &Vault, lookups: &Lookups<'_>, index: usize, today: &str) -> Value {
    let note = &vault.notes[index];
    let mut truncated = false;
    let mut unavailable = false;
    let reference = |i: usize| {
        let n = &vault.notes[i];
        json!({ "id": n.meta.id, "path": n.path })
    };
    let mut supersedes = Vec::new();
    for id in &note.meta.supersedes {
        match lookups.note(id) {
            Some(i) => supersedes.push(reference(i)),
            None => unavailable = true,
        }
    }
    let mut superseded_by: Vec<Value> = match &note.meta.id {
        Some(id) if note.meta.kind == Kind::Decision => lookups
            .successors
            .get(id.as_str())
            .map(|v| {
                v.iter()
                    .filter(|&&i| i != index)
                    .map(|&i| reference(i))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    for list in [&mut supersedes, &mut superseded_by] {
        if list.len() > MAX_HISTORY {
            list.truncate(MAX_HISTORY);
            truncated = true;
        }
    }
    let mut reviews: Vec<&crate::vault::review::Row> = lookups
        .reviews
        .get(note.path.as_str())
        .cloned()
        .unwrap_or_default();
    reviews.sort_by(|a, b| (a.date.as_str(), a.ordinal).cmp(&(b.date.as_str(), b.ordinal)));
    let effective = lookups.effective_review(&note.path, today);
    if reviews.len() > MAX_HISTORY {
        truncated = true;
        let mut kept: Vec<_> = reviews[reviews.len() - MAX_HISTORY..].to_vec();
        if let Some(e) = effective
            && !kept.iter().any(|r| r.ordinal == e.ordinal)
        {
            kept[0] = e;
            kept.sort_by(|a, b| (a.date.as_str(), a.ordinal).cmp(&(b.date.as_str(), b.ordinal)));
        }
        reviews = kept;
    }
    if note.meta.kind == Kind::Decision && vault.review_log.unavailable {
        unavailable = true;
    }
    let reviews: Vec<Value> = reviews
        .iter()
        .map(|r| {
            json!({
                "date": r.date,
                "effective": effective.is_some_and(|e| e.ordinal == r.ordinal),
                "occurrence": r.occurrence,
                "outcome": r.outcome,
                "row_sha256": r.sha256,
            })
        })
        .collect();
    json!({
        "reviews": reviews,
        "superseded_by": superseded_by,
        "supersedes": supersedes,
        "truncated": truncated,
        "unavailable": unavailable,
    })
}

/// The empty history of an evidence row.
pub fn empty() -> Value {
    json!({ "reviews": [], "superseded_by": [], "supersedes": [], "truncated": false, "unavailable": false })
}
