//! The use cases every surface shares: the context verbs (a note, a
//! correction or a withdrawal, a person's review decisions), the check,
//! the hooks, sync, import and export, the store doctor, the atlas and
//! search. Each builds its operation, asks the policy, and appends it;
//! none prints.
//!
//! This file is the facade: what a verb runs in (`Project`, `Call`,
//! [`Session`]) is in `runtime.rs`, [`ContextError`] in `error.rs`.

pub(crate) mod apply;
pub(crate) mod atlas;
pub(crate) mod atlas_page;
pub(crate) mod changeset;
pub(crate) mod check;
pub(crate) mod checkpointed;
pub(crate) mod content;
pub(crate) mod corroborate;
pub(crate) mod decisions;
pub(crate) mod doctor;
pub(crate) mod door;
pub(crate) mod env;
mod error;
pub(crate) mod fix;
mod here;
pub mod hook;
mod import;
pub(crate) mod log;
mod note;
pub(crate) mod outcomes;
mod points;
pub(crate) mod rebuild;
pub(crate) mod reset;
pub(crate) mod review;
mod rules_cache;
pub(crate) mod rulesfiles;
pub(crate) use rules_cache::NAME as RULES_CACHE;
pub(crate) use rules_cache::SEEN as RULES_SEEN;
mod runtime;
pub(crate) mod search;
pub(crate) mod settle;
pub(crate) mod sync;
pub(crate) mod transfer;
pub mod trust;
pub mod workspace;

pub(crate) use apply::{Edit, apply_edits};
#[cfg(test)]
pub(crate) use env::FixedEnv;
pub(crate) use env::{Env, EnvError, ProcessEnv};
pub(crate) use error::ContextError;
pub(crate) use runtime::{Call, Project, Session, work_tree_path, write_clock};

pub(crate) use here::{AtPath, Item, at_path};
pub(crate) use import::{
    DisagreeingRule, Disagreement, ImportOutcome, disagreements, disagreements_at,
    import_context_files, never_imported,
};
#[cfg(test)]
pub(crate) use note::Noted;
pub(crate) use note::{NoteRequest, NoteWhat, note};
pub use points::{PointMap, PointsError, point_of};
pub(crate) use reset::{ResetRequest, reset};
#[cfg(test)]
pub(crate) use review::pending;
pub(crate) use review::{Pending, ReviewRequest, Reviewed, review};

#[cfg(test)]
mod tests;
