//! Context operations: the record, its id, the avoided forms of a term rule,
//! scopes, the policy, the fold, and who is acting.

pub(crate) mod actor;
pub mod axes;
mod canonical;
pub(crate) mod draft;
pub mod fold;
pub(crate) mod forms;
pub(crate) mod group;
pub(crate) mod history;
pub mod id;
pub(crate) mod op;
pub(crate) mod policy;
pub mod record;
pub(crate) mod rules;
pub(crate) mod scope;
pub(crate) mod settle;
pub mod slim;
pub mod trust;
pub(crate) mod valid;
pub(crate) mod widen;

pub(crate) use draft::{Draft, Drafted};
pub use fold::fold;
pub(crate) use fold::{Ledger, State, Status};
pub use id::OpId;
pub(crate) use op::Op;
pub use record::Record;
pub(crate) use record::{ActorKind, Kind};
pub(crate) use rules::{PathGlobs, RuleId, TermRule};
