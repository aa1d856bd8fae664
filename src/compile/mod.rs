//! compile-context: explicit targets and/or a query turned into a
//! deterministic, read-only, byte-bounded agent context
//! (`kapi.compiled-context/v1`, see `docs/compiled-context.md`).
//!
//! The compiler reads only the permitted view of the vault, so sensitivity
//! filtering happens before matching, BM25 statistics, expansion, evidence
//! lookup and hashing. It never calls a model, and every report says
//! `execution_authorized: false`.

pub(crate) mod applicability;
pub(crate) mod artifacts;
pub(crate) mod budget;
mod declared;
pub(crate) mod history;
pub(crate) mod manifest;
pub(crate) mod rank;
pub(crate) mod report;
pub(crate) mod request;
pub(crate) mod select;
pub mod verify;
pub mod verify_claim;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use time::Date;

pub use budget::serialize;
pub use rank::Ranking;
pub(crate) use request::{Request, RequestError, Resolved, day_of};
pub(crate) use verify::{Verification, VerifyStatus, verify_compiled};

use crate::vault::{self, Grant, Layout, Narrowing, Vault, VaultError};

pub(crate) const FORMAT: &str = "kapi.compiled-context/v1";
pub(crate) const CONTRACT_VERSION: u64 = 1;
/// Budgets below this are rejected before the vault is read.
pub(crate) const MIN_MAX_BYTES: usize = 160;
/// At most 4 MiB of output.
pub(crate) const MAX_MAX_BYTES: usize = 4 * 1024 * 1024;
pub(crate) const MAX_TARGETS: usize = 64;
pub(crate) const MAX_DOCS: usize = 64;
pub(crate) const MAX_QUERY_BYTES: usize = 4096;
pub(crate) const MAX_AGENT_BYTES: usize = 256;

/// Why compilation was rejected. Codes are fixed and redacted.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("budget_too_small: max_bytes must be at least {MIN_MAX_BYTES}")]
    BudgetTooSmall,
    #[error("budget_too_large: max_bytes must be at most {MAX_MAX_BYTES}")]
    BudgetTooLarge,
    #[error("max_docs_out_of_range: max_docs must be between 1 and {MAX_DOCS}")]
    MaxDocs,
    #[error("too_many_targets: at most {MAX_TARGETS} explicit targets")]
    TooManyTargets,
    #[error("query_too_long: the query is limited to {MAX_QUERY_BYTES} bytes")]
    QueryTooLong,
    #[error("agent_too_long: the agent name is limited to {MAX_AGENT_BYTES} bytes")]
    AgentTooLong,
    #[error("empty_recipe: give at least one target or a query")]
    EmptyRecipe,
    #[error("unknown ranking {0:?}: use substring, bm25 or hybrid")]
    UnknownRanking(String),
    #[error("{0}")]
    Vault(#[from] VaultError),
    #[error("{0}")]
    Rank(#[from] rank::RankError),
    /// A loaded view compiled under another grant or scope than it was
    /// read with (an internal error: the view decides what is visible).
    #[error("view_mismatch: the vault view was loaded with another grant or scope")]
    ViewMismatch,
}

impl CompileError {
    /// Errors of the request itself, as opposed to the vault or engine.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Vault(_) | Self::Rank(_) | Self::ViewMismatch)
    }
}

/// The recipe: what to compile. Bound into the manifest and re-run by
/// verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    pub targets: Vec<String>,
    pub query: Option<String>,
    pub ranking: Ranking,
    pub max_docs: usize,
    pub max_bytes: usize,
    pub agent: Option<String>,
}

impl Default for Recipe {
    fn default() -> Self {
        Self {
            targets: Vec::new(),
            query: None,
            ranking: Ranking::Substring,
            max_docs: 8,
            max_bytes: 32768,
            agent: None,
        }
    }
}

impl Recipe {
    /// Check the recipe's bounds; the budget first, before anything else.
    pub fn validate(&self) -> Result<(), CompileError> {
        if self.max_bytes < MIN_MAX_BYTES {
            return Err(CompileError::BudgetTooSmall);
        }
        if self.max_bytes > MAX_MAX_BYTES {
            return Err(CompileError::BudgetTooLarge);
        }
        if self.max_docs == 0 || self.max_docs > MAX_DOCS {
            return Err(CompileError::MaxDocs);
        }
        if self.targets.len() > MAX_TARGETS {
            return Err(CompileError::TooManyTargets);
        }
        if self
            .query
            .as_ref()
            .is_some_and(|q| q.len() > MAX_QUERY_BYTES)
        {
            return Err(CompileError::QueryTooLong);
        }
        if self
            .agent
            .as_ref()
            .is_some_and(|a| a.len() > MAX_AGENT_BYTES)
        {
            return Err(CompileError::AgentTooLong);
        }
        if self.targets.is_empty() && self.query.as_ref().is_none_or(|q| q.trim().is_empty()) {
            return Err(CompileError::EmptyRecipe);
        }
        Ok(())
    }
}

/// Everything a compilation takes: the recipe, the evaluation day and the
/// caller's sensitivity grant (default: public only). Built keyword-style:
/// `Options::new(today).targets(["D-001"]).query("review").ranking(Ranking::Bm25)`.
#[derive(Debug, Clone)]
pub struct Options {
    pub recipe: Recipe,
    pub today: Date,
    pub grant: Grant,
    /// A caller's narrower grant: candidate note paths and evidence ids.
    pub scope: Narrowing,
    /// Where the logs and registers live (`[vault]` in kapi.toml).
    pub layout: Layout,
}

impl Options {
    pub fn new(today: Date) -> Self {
        Self {
            recipe: Recipe::default(),
            today,
            grant: Grant::public(),
            scope: Narrowing::default(),
            layout: Layout::default(),
        }
    }

    pub fn targets<S: Into<String>>(mut self, targets: impl IntoIterator<Item = S>) -> Self {
        self.recipe.targets = targets.into_iter().map(Into::into).collect();
        self
    }

    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.recipe.query = Some(query.into());
        self
    }

    pub fn ranking(mut self, ranking: Ranking) -> Self {
        self.recipe.ranking = ranking;
        self
    }

    pub fn max_docs(mut self, n: usize) -> Self {
        self.recipe.max_docs = n;
        self
    }

    pub fn max_bytes(mut self, n: usize) -> Self {
        self.recipe.max_bytes = n;
        self
    }

    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.recipe.agent = Some(agent.into());
        self
    }

    pub fn allowed_sensitivities(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Only these relative note paths are candidates.
    pub fn paths(mut self, paths: BTreeSet<String>) -> Self {
        self.scope.paths = Some(paths);
        self
    }

    /// The log and register paths, relative to the vault root.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Only these evidence row ids are candidates.
    pub fn evidence_ids(mut self, ids: BTreeSet<String>) -> Self {
        self.scope.evidence = Some(ids);
        self
    }
}

/// A compiled report: `status` `compiled` or the bounded `refused` object.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    pub value: Value,
}

impl Compiled {
    pub fn refused(&self) -> bool {
        self.value["status"] == "refused"
    }

    /// The wire bytes (the sole serializer).
    pub fn to_bytes(&self) -> Vec<u8> {
        serialize(&self.value)
    }
}

/// Compile the vault at `root` for `options`.
pub fn compile_context(root: &Path, options: &Options) -> Result<Compiled, CompileError> {
    options.recipe.validate()?;
    let vault = vault::load_with_layout(root, &options.grant, &options.scope, &options.layout)?;
    compile_vault(&vault, options)
}

/// Compile an already loaded permitted view (pure). Crate-private: the
/// view is what decides visibility, so outside callers go through
/// [`compile_context`], which loads it for their grant; and a view loaded
/// with another grant, scope or layout than `options` is refused.
pub(crate) fn compile_vault(vault: &Vault, options: &Options) -> Result<Compiled, CompileError> {
    let recipe = &options.recipe;
    recipe.validate()?;
    if vault.loaded_with
        != (
            options.grant.clone(),
            options.scope.clone(),
            options.layout.clone(),
        )
    {
        return Err(CompileError::ViewMismatch);
    }
    let as_of = vault::date::format(options.today);
    let lookups = applicability::Lookups::new(vault);
    let applicability: Vec<_> = (0..vault.notes.len())
        .map(|i| applicability::evaluate(vault, &lookups, i, options.today))
        .collect();
    let selection = match select::select(
        vault,
        &applicability,
        &recipe.targets,
        recipe.query.as_deref(),
        recipe.ranking,
        recipe.max_docs,
    ) {
        Ok(selection) => selection,
        // Over the hybrid bounds: the bounded refusal, never another ranker.
        Err(rank::RankError::ScopeTooLarge) => {
            return Ok(Compiled {
                value: budget::refusal(recipe.max_bytes, "scope_too_large"),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let contexts = report::contexts(vault, &lookups, &applicability, &selection.selected, &as_of);
    let (values, bodies): (Vec<Value>, Vec<String>) =
        contexts.into_iter().map(|c| (c.value, c.body)).unzip();
    let mut report = json!({
        "budget": { "max_bytes": recipe.max_bytes, "truncated_contexts": 0, "used_bytes": 0 },
        "citations": report::citations(vault, &selection.selected),
        "contexts": values,
        "contract_version": CONTRACT_VERSION,
        "execution_authorized": false,
        "format": FORMAT,
        "manifest": manifest::manifest(vault, recipe, &options.grant, &as_of, &selection.selected),
        "omissions": selection.omissions,
        "preamble": report::PREAMBLE,
        "status": "compiled",
        "warnings": report::warnings(vault, &lookups, &applicability, &selection.selected, &as_of),
    });
    if let Some(retrieval) = selection.retrieval {
        report["retrieval"] = retrieval;
    }
    let value = budget::fit(report, &bodies, recipe.max_bytes)
        .unwrap_or_else(|| budget::refusal(recipe.max_bytes, "budget_too_small"));
    Ok(Compiled { value })
}

/// The sole wire serializer for a compiled report.
pub(crate) fn serialize_compiled(compiled: &Compiled) -> Vec<u8> {
    compiled.to_bytes()
}
