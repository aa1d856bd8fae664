//! The flags `compile-context` and `verify-context` share (the day, the
//! vault, the grant), turned into the library's `compile::Request`.

use std::path::{Path, PathBuf};

use crate::compile::Request;

/// The day, the vault and the grant: what compile-context and
/// verify-context both read the vault with.
#[derive(Debug, clap::Args)]
#[group(skip)]
pub struct VaultArgs {
    /// The evaluation day, YYYY-MM-DD (default: today in UTC).
    #[arg(long, value_name = "DATE")]
    pub today: Option<String>,
    /// The vault folder (default: `[vault] root` in kapi.toml, else `decisions`).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Permit every label up to this one: public, internal, confidential, restricted.
    #[arg(long, value_name = "LABEL", conflicts_with = "allow")]
    pub max_sensitivity: Option<String>,
    /// Permit exactly these labels, comma-separated.
    #[arg(long, value_name = "LABELS")]
    pub allow: Option<String>,
}

impl VaultArgs {
    /// The request these flags make, run in `cwd`.
    pub(crate) fn request<'a>(&'a self, cwd: &'a Path) -> Request<'a> {
        Request {
            cwd,
            today: self.today.as_deref(),
            root: self.root.as_deref(),
            max_sensitivity: self.max_sensitivity.as_deref(),
            allow: self.allow.as_deref(),
        }
    }
}
