//! [`ContextError`]: what a use case fails with.

use super::env::EnvError;
use super::points::PointsError;
use super::rulesfiles;
use crate::config::ConfigError;
use crate::ops::forms::FormsError;
use crate::ops::id::ResolveError;
use crate::ops::policy::PolicyError;
use crate::ops::scope::ScopeError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("refused by the policy: {0}")]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Forms(#[from] FormsError),
    #[error(transparent)]
    Scope(#[from] ScopeError),
    #[error(transparent)]
    Actor(#[from] crate::ops::actor::ActorError),
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error("kapi.toml: {0}")]
    Points(#[from] PointsError),
    #[error("kapi.toml: {0}")]
    Axes(#[from] crate::ops::axes::AxesError),
    #[error(transparent)]
    RulesFile(#[from] rulesfiles::RulesFileIo),
    /// Bad input the caller can fix; the message says how.
    #[error("{0}")]
    Usage(String),
    /// A decision the state of the log does not allow; the message says why.
    #[error("{0}")]
    Refused(String),
}
