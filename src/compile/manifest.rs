//! The manifest: what a compiled report is bound to.
//!
//! It binds the raw bytes of every permitted note outside the raw logs
//! (conservatively, not only the selected ones), the permitted row
//! projections of the evidence register, review log and decision log, the
//! effective policy, the recipe, the ranking engine, the selections, the
//! evaluation date and (through `report_sha256`) the complete report.

use serde_json::{Value, json};

use super::Recipe;
use super::select::{Rec, SelectedBy};
use crate::digest::{self, Running};
use crate::fsutil::READ_CAP;
use crate::vault::frontmatter::FRONT_MATTER_LIMIT;
use crate::vault::{Grant, LogState, Vault};

/// The placeholder `report_sha256` while the report's digest is computed.
pub const DIGEST_PLACEHOLDER: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

/// The effective policy: the grant and the fixed classifier and read limits.
pub fn policy(grant: &Grant) -> Value {
    let body = json!({
        "allowed_sensitivities": grant.names(),
        "classifier": "kapi.fail-closed/1: missing or unknown labels are restricted",
        "front_matter_limit": FRONT_MATTER_LIMIT,
        "read_cap": READ_CAP,
    });
    let sha = digest::sha256_hex(&digest::canonical(&body));
    let mut v = body;
    v["sha256"] = Value::String(sha);
    v
}

fn log_state(s: LogState) -> Value {
    json!({ "present": s.present, "unavailable": s.unavailable })
}

/// Digests of the permitted inputs.
pub fn inputs(vault: &Vault) -> Value {
    let mut notes = Running::default();
    for n in &vault.notes {
        notes.add(n.path.as_bytes());
        notes.add(b"\0");
        notes.add(n.sha256.as_bytes());
        notes.add(b"\n");
    }
    let rows = |hashes: &mut dyn Iterator<Item = &str>| {
        let mut r = Running::default();
        for h in hashes {
            r.add(h.as_bytes());
            r.add(b"\n");
        }
        r.finish()
    };
    let mut v = json!({
        "decision_log": {
            "rows": vault.decision_events.len(),
            "sha256": rows(&mut vault.decision_events.iter().map(|r| r.sha256.as_str())),
            "state": log_state(vault.decision_log),
        },
        "evidence": {
            "rows": vault.evidence.len(),
            "sha256": rows(&mut vault.evidence.iter().map(|r| r.sha256.as_str())),
            "state": log_state(vault.register),
        },
        "notes": { "count": vault.notes.len(), "sha256": notes.finish() },
        "reviews": {
            "rows": vault.reviews.len(),
            "sha256": rows(&mut vault.reviews.iter().map(|r| r.sha256.as_str())),
            "state": log_state(vault.review_log),
        },
    });
    // Only a view holding claims binds them, so a vault without claims
    // keeps its bytes.
    if !vault.claims.is_empty() || !vault.withheld_claims.is_empty() {
        v["claims"] = claims(vault);
    }
    v
}

/// The released claims' sources: for each, its path, pinned capture
/// digest (checked against the capture's bytes), latest observed digest
/// and the digest of its full ledger, so a new observation makes an
/// artifact stale even when the bytes return to an earlier version. Withheld
/// claims are counted, never hashed.
fn claims(vault: &Vault) -> Value {
    let mut r = Running::default();
    for (i, c) in &vault.claims {
        let latest = c
            .sources
            .observations
            .last()
            .map_or("", |o| o.sha256.as_str());
        for part in [
            vault.notes[*i].path.as_str(),
            c.payload.capture.as_str(),
            latest,
            c.sources.ledger_path.as_str(),
            c.sources.ledger_sha256.as_deref().unwrap_or("absent"),
        ] {
            r.add(part.as_bytes());
            r.add(b"\0");
        }
        r.add(b"\n");
    }
    json!({
        "released": vault.claims.len(),
        "sha256": r.finish(),
        "withheld": vault.withheld_claims.len(),
    })
}

pub fn recipe(recipe: &Recipe) -> Value {
    let mut v = json!({
        "agent": recipe.agent,
        "max_bytes": recipe.max_bytes,
        "max_docs": recipe.max_docs,
        "query": recipe.query,
        "ranking": recipe.ranking.as_str(),
        "targets": recipe.targets,
    });
    // The hybrid ranker's fixed weights and bounds are part of its recipe.
    if recipe.ranking == super::Ranking::Hybrid {
        v["retrieval"] = super::rank::hybrid::parameters();
    }
    v
}

pub fn selections(vault: &Vault, selected: &[(Rec, SelectedBy)]) -> Vec<Value> {
    selected
        .iter()
        .map(|(rec, by)| {
            let (id, path) = match *rec {
                Rec::Note(i) => (vault.notes[i].meta.id.clone(), vault.notes[i].path.clone()),
                Rec::Evidence(i) => (
                    Some(vault.evidence[i].id.clone()),
                    format!("evidence:{}", vault.evidence[i].id),
                ),
            };
            json!({ "id": id, "path": path, "selected_by": by.as_str() })
        })
        .collect()
}

pub fn manifest(
    vault: &Vault,
    r: &Recipe,
    grant: &Grant,
    as_of: &str,
    selected: &[(Rec, SelectedBy)],
) -> Value {
    json!({
        "as_of": as_of,
        "engine": { "compiler": super::FORMAT, "ranker": r.ranking.engine() },
        "inputs": inputs(vault),
        "policy": policy(grant),
        "recipe": recipe(r),
        "report_sha256": DIGEST_PLACEHOLDER,
        "selections": selections(vault, selected),
    })
}
