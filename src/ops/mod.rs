//! Context operations: the record, its id, the avoided forms of a term rule,
//! scopes, the policy, the fold, and who is acting.

pub mod actor;
pub mod axes;
pub mod draft;
pub mod fold;
pub mod forms;
pub mod group;
pub mod history;
pub mod id;
pub mod op;
pub mod policy;
pub mod record;
pub mod rules;
pub mod scope;
pub mod settle;
pub mod valid;
pub mod widen;

pub use draft::{Draft, Drafted};
pub use fold::{Ledger, State, Status, fold};
pub use id::OpId;
pub use op::Op;
pub use record::{Actor, ActorKind, Kind, Record, Subject};
pub use rules::{RuleId, TermRule};
