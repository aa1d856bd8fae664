//! The use cases every surface shares: the context verbs (a note, a
//! correction or a withdrawal, a person's review decisions), the check,
//! the hooks, sync, import and export, the store doctor, the atlas and
//! search. Each builds its operation, asks the policy, and appends it;
//! none prints.
//!
//! This file is the facade: what a verb runs in ([`Project`], [`Call`],
//! [`Session`]) is in `runtime.rs`, [`ContextError`] in `error.rs`.

pub mod atlas;
pub mod check;
pub mod checkpointed;
pub mod corroborate;
pub mod decisions;
pub mod doctor;
pub mod door;
pub mod env;
mod error;
mod here;
pub mod hook;
mod import;
pub mod log;
mod note;
pub mod outcomes;
mod points;
pub mod reset;
pub mod review;
pub mod rulesfiles;
mod runtime;
pub mod search;
pub mod settle;
pub mod sync;
pub mod transfer;
pub mod workspace;

pub use env::{Env, EnvError, FixedEnv, ProcessEnv};
pub use error::ContextError;
pub use runtime::{Call, Project, Session, work_tree_path, write_clock};

pub use here::{AtPath, Here, Item, applies_at, at_path};
pub use import::{
    ContextFile, ContextFileKind, DisagreeingRule, Disagreement, ImportOutcome, context_files,
    disagreements, import_context_files, never_imported,
};
pub use note::{NoteRequest, NoteWhat, Noted, note};
pub use points::{PointMap, PointsError, point_of};
pub use reset::{ResetReport, ResetRequest, reset};
pub use review::{Pending, ReviewRequest, Reviewed, pending, pending_from, review};

#[cfg(test)]
mod tests;
