//! What a caller asks one compilation or verification with, as it names
//! it (the command line's flags; a server's arguments later): the
//! evaluation day, the vault folder, the sensitivity grant and the ranker,
//! each as text. Resolved here, once, so every surface reads the same
//! project and refuses the same things in the same words; the hooks take
//! their day from [`day_of`] too.

use std::path::{Path, PathBuf};

use time::Date;

use super::artifacts::{GrantError, grant_from};
use super::{CompileError, Ranking};
use crate::config::{Config, ConfigError};
use crate::vault::{Grant, Layout, date};

/// A compilation or verification as the caller names it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Where the caller runs: the project is the work tree holding it.
    pub cwd: &'a Path,
    /// The evaluation day, `YYYY-MM-DD` (default: today in UTC).
    pub today: Option<&'a str>,
    /// The vault folder, relative to `cwd` (default: `[vault] root` in
    /// kapi.toml, else `decisions`).
    pub root: Option<&'a Path>,
    /// Permit every label up to this one.
    pub max_sensitivity: Option<&'a str>,
    /// Permit exactly these labels, comma-separated.
    pub allow: Option<&'a str>,
}

/// Why a request cannot be used: every one is the caller's to fix.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("--today {0:?} is not a YYYY-MM-DD date")]
    Today(String),
    /// The clock could not be read (a `KAPI_NOW` that is no instant).
    #[error("{0}")]
    Clock(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("the clock ({0} ms) is outside the range of dates")]
    OutOfRange(u64),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Grant(#[from] GrantError),
    /// A ranker that is unknown.
    #[error(transparent)]
    Ranking(#[from] CompileError),
}

/// A request resolved against its project: what `--all` needs.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The top of the git work tree holding `cwd` (found as the store
    /// finds it), else `cwd`.
    pub project: PathBuf,
    /// The project's `kapi.toml`.
    pub config: Config,
    /// The evaluation day.
    pub today: Date,
}

/// The vault one artifact is compiled from or verified against, and the
/// grant it is read under.
#[derive(Debug, Clone)]
pub struct VaultChoice {
    pub root: PathBuf,
    pub grant: Grant,
    pub layout: Layout,
}

impl Request<'_> {
    /// The project, its `kapi.toml` and the day; the clock (`now_ms`) is
    /// read only when no day is named.
    pub fn resolve<E>(
        &self,
        now_ms: impl FnOnce() -> Result<u64, E>,
    ) -> Result<Resolved, RequestError>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let today = match self.today {
            Some(text) => date::parse(text).ok_or_else(|| RequestError::Today(text.to_owned()))?,
            None => day_of(now_ms().map_err(|e| RequestError::Clock(Box::new(e)))?)?,
        };
        let project =
            crate::git::Repo::project_root(self.cwd).unwrap_or_else(|| self.cwd.to_path_buf());
        let config = Config::load(&project)?;
        Ok(Resolved {
            project,
            config,
            today,
        })
    }

    /// The vault folder (`root` relative to `cwd`, else the project's
    /// `[vault] root`), the grant and the layout, for one artifact.
    pub fn vault(&self, resolved: &Resolved) -> Result<VaultChoice, RequestError> {
        let list: Option<Vec<String>> = self
            .allow
            .map(|a| a.split(',').map(|s| s.trim().to_string()).collect());
        let grant = grant_from(self.max_sensitivity, list.as_deref())?;
        let root = match self.root {
            Some(r) => self.cwd.join(r),
            None => resolved.project.join(resolved.config.vault_root()),
        };
        Ok(VaultChoice {
            root,
            grant,
            layout: Layout::from_config(&resolved.config.vault),
        })
    }
}

/// The UTC date of the clock at `now_ms` (Unix milliseconds): the
/// evaluation day when none is named (`KAPI_NOW` pins it in tests).
pub fn day_of(now_ms: u64) -> Result<Date, RequestError> {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(now_ms) * 1_000_000)
        .map(|t| t.date())
        .map_err(|_| RequestError::OutOfRange(now_ms))
}

impl Ranking {
    /// The ranker a caller names: unknown names are refused.
    pub fn requested(text: &str) -> Result<Self, CompileError> {
        Self::parse(text).ok_or_else(|| CompileError::UnknownRanking(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_day_is_parsed_and_the_clock_is_read_only_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let request = Request {
            cwd: dir.path(),
            today: Some("2026-03-01"),
            root: None,
            max_sensitivity: None,
            allow: None,
        };
        let unread = || -> Result<u64, std::io::Error> { panic!("the clock is not read") };
        let resolved = request.resolve(unread).unwrap();
        assert_eq!(date::format(resolved.today), "2026-03-01");
        assert_eq!(resolved.project, dir.path());
        let bad = Request {
            today: Some("March"),
            ..request
        };
        assert!(matches!(bad.resolve(unread), Err(RequestError::Today(_))));
        let clock = Request {
            today: None,
            ..request
        };
        // 2026-03-01T12:00:00Z
        let resolved = clock
            .resolve(|| Ok::<_, std::io::Error>(1_772_366_400_000))
            .unwrap();
        assert_eq!(date::format(resolved.today), "2026-03-01");
        let broken = clock.resolve(|| Err(std::io::Error::other("KAPI_NOW=soon")));
        assert_eq!(broken.unwrap_err().to_string(), "KAPI_NOW=soon");
        assert!(matches!(day_of(u64::MAX), Err(RequestError::OutOfRange(_))));
    }

    #[test]
    fn the_vault_is_the_named_root_else_the_projects_and_the_grant_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let request = Request {
            cwd: dir.path(),
            today: Some("2026-03-01"),
            root: None,
            max_sensitivity: None,
            allow: None,
        };
        let unread = || -> Result<u64, std::io::Error> { unreachable!() };
        let resolved = request.resolve(unread).unwrap();
        let vault = request.vault(&resolved).unwrap();
        assert_eq!(vault.root, dir.path().join("decisions"));
        assert_eq!(vault.grant, Grant::public());
        let named = Request {
            root: Some(Path::new("elsewhere")),
            allow: Some("public, internal"),
            ..request
        };
        assert_eq!(
            named.vault(&resolved).unwrap().root,
            dir.path().join("elsewhere")
        );
        let both = Request {
            max_sensitivity: Some("internal"),
            allow: Some("public"),
            ..request
        };
        assert!(matches!(
            both.vault(&resolved),
            Err(RequestError::Grant(GrantError::Both))
        ));
    }

    #[test]
    fn unknown_rankers_are_refused() {
        assert_eq!(Ranking::requested("bm25").unwrap(), Ranking::Bm25);
        assert_eq!(Ranking::requested("hybrid").unwrap(), Ranking::Hybrid);
        assert!(matches!(
            Ranking::requested("fuzzy"),
            Err(CompileError::UnknownRanking(_))
        ));
    }
}
