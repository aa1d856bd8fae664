//! verify-claim: do a claim's quotes still say what its capture's bytes
//! say at their byte anchors?
//!
//! The claim is resolved inside the caller's permitted view (by id or by
//! path) and must be released: every E-ID it names in the caller's
//! evidence view. Each quote's `text` must equal `capture[start..end]`
//! byte for byte. This checks the anchors, not semantic support.

use std::path::Path;

use serde_json::{Value, json};

use super::CompileError;
use crate::vault::claim::{self, ClaimError};
use crate::vault::{self, Grant, Layout, Narrowing, VaultError};

pub(crate) const FORMAT: &str = "kapi.claim-verification/v1";

/// The verdict: `verified` (exit 0), `failed` (1) or `refused` (3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimStatus {
    Verified,
    Failed,
    Refused,
}

impl ClaimStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Failed => "failed",
            Self::Refused => "refused",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClaimVerification {
    pub status: ClaimStatus,
    pub value: Value,
}

fn refused(target: &str, reason: &str) -> ClaimVerification {
    ClaimVerification {
        status: ClaimStatus::Refused,
        value: json!({
            "claim": target,
            "execution_authorized": false,
            "format": FORMAT,
            "quotes": [],
            "reasons": [reason],
            "status": "refused",
        }),
    }
}

/// Verify the claim `target` (an id or a path relative to the vault).
pub fn verify_claim(
    root: &Path,
    target: &str,
    grant: &Grant,
    layout: &Layout,
) -> Result<ClaimVerification, CompileError> {
    let vault = vault::load_with_layout(root, grant, &Narrowing::default(), layout)?;
    if vault
        .withheld_claims
        .iter()
        .any(|c| c.path == target || c.id.as_deref() == Some(target))
    {
        return Ok(refused(target, "withheld"));
    }
    let found: Vec<usize> = vault
        .claims
        .keys()
        .copied()
        .filter(|&i| {
            let n = &vault.notes[i];
            n.path == target || n.meta.id.as_deref() == Some(target)
        })
        .collect();
    let i = match found.as_slice() {
        [one] => *one,
        [] => return Ok(refused(target, "not_found")),
        _ => return Ok(refused(target, "ambiguous")),
    };
    let note = &vault.notes[i];
    let payload = &vault.claims[&i].payload;
    let bytes = claim::read_capture(root, &payload.capture)
        .map_err(|e: ClaimError| CompileError::Vault(VaultError::Claim(e)))?;
    let mut all = true;
    let quotes: Vec<Value> = payload
        .quotes
        .iter()
        .enumerate()
        .map(|(n, q)| {
            let span = usize::try_from(q.start)
                .ok()
                .zip(usize::try_from(q.end).ok())
                .and_then(|(s, e)| bytes.get(s..e));
            let status = match span {
                None => "out_of_range",
                Some(b) if b == q.text.as_bytes() => "match",
                Some(_) => "mismatch",
            };
            all &= status == "match";
            json!({ "end": q.end, "index": n + 1, "start": q.start, "status": status })
        })
        .collect();
    let (status, reasons): (ClaimStatus, Vec<&str>) = if all {
        (ClaimStatus::Verified, vec![])
    } else {
        (ClaimStatus::Failed, vec!["quote_mismatch"])
    };
    Ok(ClaimVerification {
        status,
        value: json!({
            "capture": payload.capture,
            "claim": target,
            "claim_id": note.meta.id,
            "execution_authorized": false,
            "format": FORMAT,
            "path": note.path,
            "quotes": quotes,
            "reasons": reasons,
            "status": status.as_str(),
        }),
    })
}
