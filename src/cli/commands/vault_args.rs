//! The flags `compile-context` and `verify-context` share (the day, the
//! vault, the grant, the ranking) and what they turn into.

use std::path::{Path, PathBuf};

use super::Ctx;
use crate::cli::exit::CliError;
use crate::compile::{Ranking, artifacts};
use crate::config::Config;
use crate::vault::{Grant, date};

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

/// The evaluation day: `--today`, else the UTC date of the clock, which
/// `KAPI_NOW` (RFC 3339 or Unix milliseconds) pins for tests.
pub(crate) fn today(text: Option<&str>, ctx: &Ctx) -> Result<time::Date, CliError> {
    if let Some(t) = text {
        return date::parse(t)
            .ok_or_else(|| CliError::usage(format!("--today {t:?} is not a YYYY-MM-DD date")));
    }
    let ms = ctx.env.now_ms()?;
    let now = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).map_err(
        |_| CliError::usage(format!("the clock ({ms} ms) is outside the range of dates")),
    )?;
    Ok(now.date())
}

pub(crate) fn ranking(text: &str) -> Result<Ranking, CliError> {
    match Ranking::parse(text) {
        Some(Ranking::Hybrid) => Err(CliError::usage(
            "ranking_unavailable: --ranking hybrid is not available yet; use substring or bm25",
        )),
        Some(r) => Ok(r),
        None => Err(CliError::usage(format!(
            "unknown --ranking {text:?}: use substring or bm25"
        ))),
    }
}

pub(crate) fn grant(max: Option<&str>, allow: Option<&str>) -> Result<Grant, CliError> {
    let list: Option<Vec<String>> =
        allow.map(|a| a.split(',').map(|s| s.trim().to_string()).collect());
    Ok(artifacts::grant_from(max, list.as_deref())?)
}

/// The project directory (top of the git work tree, found as the store
/// finds it, else the current directory) and its `kapi.toml`.
pub(crate) fn project(ctx: &Ctx) -> Result<(PathBuf, Config), CliError> {
    let project = crate::git::Repo::project_root(&ctx.cwd).unwrap_or_else(|| ctx.cwd.clone());
    let config = Config::load(&project)?;
    Ok((project, config))
}

pub(crate) fn vault_root(
    ctx: &Ctx,
    project: &Path,
    config: &Config,
    root: Option<&Path>,
) -> PathBuf {
    match root {
        Some(r) => ctx.cwd.join(r),
        None => project.join(config.vault_root()),
    }
}
