//! verify-context: is a compiled report still what the same recipe
//! produces over the current permitted scope?
//!
//! The artifact is bounded untrusted input. Its structure and content
//! digest are checked, then the recipe is recompiled under the verifier's
//! own grant and evaluation day and compared byte for byte. Paths and URLs
//! inside the artifact are never opened. The answer is `current`, `stale`
//! or `refused` with fixed reason codes; it is unsigned content binding:
//! `signature_verified` and `execution_authorized` are always false.

use std::path::Path;

use serde_json::{Value, json};

use super::budget::{report_digest, serialize};
use super::{
    CONTRACT_VERSION, Compiled, FORMAT, MAX_MAX_BYTES, Options, Ranking, Recipe, artifacts,
};
use super::{CompileError, compile_context};
use crate::vault::{Grant, Layout, Narrowing};

pub(crate) const VERIFICATION_FORMAT: &str = "kapi.context-verification/v1";

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyStatus {
    Current,
    Stale,
    Refused,
}

impl VerifyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Current => "current",
            Self::Stale => "stale",
            Self::Refused => "refused",
        }
    }
}

/// A verdict with its fixed reason codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub status: VerifyStatus,
    pub reasons: Vec<&'static str>,
    pub as_of: String,
}

impl Verification {
    /// Refused for one reason, as of a day (`YYYY-MM-DD`).
    pub(crate) fn refused(reason: &'static str, as_of: &str) -> Self {
        Self {
            status: VerifyStatus::Refused,
            reasons: vec![reason],
            as_of: as_of.to_string(),
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "as_of": self.as_of,
            "execution_authorized": false,
            "format": VERIFICATION_FORMAT,
            "reasons": self.reasons,
            "signature_verified": false,
            "status": self.status.as_str(),
        })
    }
}

/// The caller's own intended recipe parameters; each one given must equal
/// the artifact's, so the caller need not trust the producer's recipe.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    pub targets: Option<Vec<String>>,
    pub query: Option<Option<String>>,
    pub ranking: Option<Ranking>,
    pub max_docs: Option<usize>,
    pub max_bytes: Option<usize>,
    pub agent: Option<Option<String>>,
}

impl Expected {
    /// Expect exactly this recipe.
    pub(crate) fn all(recipe: &Recipe) -> Self {
        Self {
            targets: Some(recipe.targets.clone()),
            query: Some(recipe.query.clone()),
            ranking: Some(recipe.ranking),
            max_docs: Some(recipe.max_docs),
            max_bytes: Some(recipe.max_bytes),
            agent: Some(recipe.agent.clone()),
        }
    }

    fn mismatch(&self, r: &Recipe) -> Option<&'static str> {
        if self.targets.as_ref().is_some_and(|t| *t != r.targets) {
            return Some("expected_targets_mismatch");
        }
        if self.query.as_ref().is_some_and(|q| *q != r.query) {
            return Some("expected_query_mismatch");
        }
        if self.ranking.is_some_and(|x| x != r.ranking) {
            return Some("expected_ranking_mismatch");
        }
        if self.max_docs.is_some_and(|x| x != r.max_docs) {
            return Some("expected_max_docs_mismatch");
        }
        if self.max_bytes.is_some_and(|x| x != r.max_bytes) {
            return Some("expected_max_bytes_mismatch");
        }
        if self.agent.as_ref().is_some_and(|a| *a != r.agent) {
            return Some("expected_agent_mismatch");
        }
        None
    }
}

/// The artifact: a parsed dictionary or untrusted bytes.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    Value(&'a Value),
    Bytes(&'a [u8]),
}

/// How to verify: the verifier's own evaluation day and grant.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub today: time::Date,
    pub grant: Grant,
    pub expected: Expected,
    pub scope: Narrowing,
    /// Where the logs and registers live (`[vault]` in kapi.toml).
    pub layout: Layout,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The vault could not be read for the recompilation.
    #[error("{0}")]
    Compile(#[from] CompileError),
}

const TOP_KEYS: [&str; 11] = [
    "budget",
    "citations",
    "contexts",
    "contract_version",
    "execution_authorized",
    "format",
    "manifest",
    "omissions",
    "preamble",
    "status",
    "warnings",
];

/// Verify `input` against the vault at `root`.
pub fn verify_compiled(
    root: &Path,
    input: Input<'_>,
    options: &VerifyOptions,
) -> Result<Verification, VerifyError> {
    let as_of = crate::vault::date::format(options.today);
    let parsed;
    let value = match input {
        Input::Value(v) => v,
        Input::Bytes(bytes) => {
            if bytes.len() > MAX_MAX_BYTES {
                return Ok(Verification::refused("input_too_large", &as_of));
            }
            let Ok(text) = std::str::from_utf8(bytes) else {
                return Ok(Verification::refused("not_utf8", &as_of));
            };
            parsed = match serde_json::from_str::<Value>(text) {
                Ok(v) => v,
                Err(_) => return Ok(Verification::refused("invalid_json", &as_of)),
            };
            if serialize(&parsed) != bytes {
                return Ok(Verification::refused("not_canonical", &as_of));
            }
            &parsed
        }
    };
    let recipe = match check_structure(value) {
        Ok(r) => r,
        Err(reason) => return Ok(Verification::refused(reason, &as_of)),
    };
    if let Some(reason) = options.expected.mismatch(&recipe) {
        return Ok(Verification::refused(reason, &as_of));
    }
    let _lock = artifacts::lock_shared(root);
    let compile_options = Options {
        recipe,
        today: options.today,
        grant: options.grant.clone(),
        scope: options.scope.clone(),
        layout: options.layout.clone(),
    };
    let fresh = compile_context(root, &compile_options)?;
    let reasons = compare(value, &fresh);
    let status = if reasons.is_empty() {
        VerifyStatus::Current
    } else {
        VerifyStatus::Stale
    };
    Ok(Verification {
        status,
        reasons,
        as_of,
    })
}

/// Check the untrusted structure and digest; return the recipe it claims.
fn check_structure(v: &Value) -> Result<Recipe, &'static str> {
    let obj = v.as_object().ok_or("not_an_object")?;
    if v["format"] != FORMAT {
        return Err("unknown_format");
    }
    match v["status"].as_str() {
        Some("compiled") => {}
        Some("refused") => return Err("artifact_refused"),
        _ => return Err("unexpected_structure"),
    }
    if v["contract_version"] != json!(CONTRACT_VERSION) {
        return Err("unsupported_contract_version");
    }
    if v["execution_authorized"] != json!(false) {
        return Err("execution_authorized");
    }
    // `retrieval` is there exactly when the recipe names the hybrid ranker.
    let hybrid = v["manifest"]["recipe"]["ranking"] == "hybrid";
    if obj.len() != TOP_KEYS.len() + usize::from(hybrid)
        || !TOP_KEYS.iter().all(|k| obj.contains_key(*k))
        || (hybrid && !v["retrieval"].is_object())
    {
        return Err("unexpected_structure");
    }
    if !v["contexts"].is_array() || !v["manifest"].is_object() || !v["budget"].is_object() {
        return Err("unexpected_structure");
    }
    let len = serialize(v).len();
    if len > MAX_MAX_BYTES {
        return Err("input_too_large");
    }
    if v["budget"]["used_bytes"] != json!(len)
        || v["budget"]["max_bytes"]
            .as_u64()
            .is_none_or(|m| (len as u64) > m)
    {
        return Err("budget_mismatch");
    }
    if v["manifest"]["report_sha256"].as_str() != Some(report_digest(v).as_str()) {
        return Err("digest_mismatch");
    }
    let r = &v["manifest"]["recipe"];
    let opt_str = |x: &Value| -> Result<Option<String>, &'static str> {
        match x {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err("invalid_recipe"),
        }
    };
    let targets = r["targets"]
        .as_array()
        .ok_or("invalid_recipe")?
        .iter()
        .map(|t| t.as_str().map(str::to_string).ok_or("invalid_recipe"))
        .collect::<Result<Vec<_>, _>>()?;
    let num = |x: &Value| {
        x.as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or("invalid_recipe")
    };
    let recipe = Recipe {
        targets,
        query: opt_str(&r["query"])?,
        ranking: r["ranking"]
            .as_str()
            .and_then(Ranking::parse)
            .ok_or("invalid_recipe")?,
        max_docs: num(&r["max_docs"])?,
        max_bytes: num(&r["max_bytes"])?,
        agent: opt_str(&r["agent"])?,
    };
    if recipe.validate().is_err() || v["budget"]["max_bytes"] != json!(recipe.max_bytes) {
        return Err("invalid_recipe");
    }
    Ok(recipe)
}

/// Why a fresh compilation differs from the artifact (empty: it does not).
fn compare(old: &Value, fresh: &Compiled) -> Vec<&'static str> {
    if fresh.refused() {
        return vec!["recompiled_refused"];
    }
    let new = &fresh.value;
    if serialize(old) == serialize(new) {
        return Vec::new();
    }
    let (om, nm) = (&old["manifest"], &new["manifest"]);
    let mut reasons = Vec::new();
    let checks: [(&str, &Value, &Value, &'static str); 10] = [
        (
            "as_of",
            &om["as_of"],
            &nm["as_of"],
            "evaluation_date_changed",
        ),
        ("policy", &om["policy"], &nm["policy"], "policy_changed"),
        ("engine", &om["engine"], &nm["engine"], "engine_changed"),
        (
            "retrieval",
            &om["recipe"]["retrieval"],
            &nm["recipe"]["retrieval"],
            "engine_changed",
        ),
        (
            "notes",
            &om["inputs"]["notes"],
            &nm["inputs"]["notes"],
            "notes_changed",
        ),
        (
            "evidence",
            &om["inputs"]["evidence"],
            &nm["inputs"]["evidence"],
            "evidence_changed",
        ),
        (
            "reviews",
            &om["inputs"]["reviews"],
            &nm["inputs"]["reviews"],
            "reviews_changed",
        ),
        (
            "decision_log",
            &om["inputs"]["decision_log"],
            &nm["inputs"]["decision_log"],
            "decision_log_changed",
        ),
        (
            "claims",
            &om["inputs"]["claims"],
            &nm["inputs"]["claims"],
            "sources_changed",
        ),
        (
            "selections",
            &om["selections"],
            &nm["selections"],
            "selection_changed",
        ),
    ];
    for (_, a, b, reason) in checks {
        if a != b && !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    if reasons.is_empty() {
        reasons.push("report_changed");
    }
    reasons
}
