//! `kapi.toml`: the project's own settings, read from the top of the work
//! tree. Every section is optional; a missing file means all defaults.
//!
//! Each concern owns its section: `[vault]` and `[[compile]]` belong to the
//! compiled context, `[check]`, `[[points]]`, `[axes]` and `[context]` to
//! the operation log and the checker.

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub(crate) const FILE_NAME: &str = "kapi.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
}

/// The whole of `kapi.toml`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The project key; defaults to the name of the work tree's folder.
    pub project: Option<String>,
    #[serde(default)]
    pub vault: VaultConfig,
    #[serde(default)]
    pub compile: Vec<CompileEntry>,
    #[serde(default)]
    pub check: CheckConfig,
    #[serde(default)]
    pub points: Vec<toml::Table>,
    /// `[axes.<name>]`: how the values of an axis sit within one another
    /// (docs/guide.md, "Axes and windows").
    #[serde(default)]
    pub axes: std::collections::BTreeMap<String, crate::ops::axes::AxisConfig>,
    #[serde(default)]
    pub context: ContextConfig,
    #[serde(default)]
    pub hooks: HooksConfig,
    #[serde(default)]
    pub sync: SyncConfig,
    /// `[trust]`: signed decisions (docs/security.md).
    pub trust: Option<TrustConfig>,
}

/// `[trust]`: who vouches for a person's decision (docs/security.md,
/// "Signed decisions").
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustConfig {
    /// git's allowed-signers file, relative to the work tree, read as the
    /// default branch holds it (an edit in the work tree grants nothing
    /// until it is committed there). Default `.kapi/allowed_signers`.
    pub allowed_signers: Option<String>,
    /// `"signed"`: a person's decision (and a merge signal or an
    /// establishment) counts only with a signature that verifies;
    /// `"shown"` (the default): signatures are recorded and shown.
    #[serde(default)]
    pub decisions: crate::ops::trust::Mode,
}

impl TrustConfig {
    /// The allowed-signers file's path in the repository.
    pub fn allowed_signers(&self) -> &str {
        self.allowed_signers
            .as_deref()
            .unwrap_or(DEFAULT_ALLOWED_SIGNERS)
    }
}

/// Where `kapi trust add` keeps the allowed-signers file by default.
pub const DEFAULT_ALLOWED_SIGNERS: &str = ".kapi/allowed_signers";

/// `[sync]`: talking to remotes (docs/sync.md).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncConfig {
    /// Seconds one fetch or push may take before it is given up (default
    /// [`SyncConfig::DEFAULT_TIMEOUT_SECS`]).
    pub timeout: Option<u64>,
}

impl SyncConfig {
    /// Long enough for a slow remote over a slow link to send a log of a
    /// million operations; short enough that a remote which accepts and
    /// never answers does not hang a hook or a CI job.
    pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

    /// How long one fetch or push may take.
    pub(crate) fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT_SECS).max(1))
    }
}

/// `[hooks]`: what the git hooks do (docs/hooks.md).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// What pre-commit does with a stale `[[compile]]` artifact: `check`
    /// (default) fails the commit with the command that regenerates it,
    /// `regenerate` recompiles it into the work tree and stages it.
    #[serde(default)]
    pub compile: CompileMode,
}

/// `[hooks] compile`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompileMode {
    #[default]
    Check,
    Regenerate,
}

/// `[vault]`: where the decision records live.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultConfig {
    /// The vault folder, relative to the work tree; default `decisions`.
    pub root: Option<PathBuf>,
    /// The evidence registers, `/`-separated paths relative to the vault
    /// folder; default `["evidence.md"]`.
    pub evidence_registers: Option<Vec<String>>,
    /// The review logs; default `["review-log.md"]`.
    pub review_logs: Option<Vec<String>>,
    /// The decision logs; default `["decision-log.md"]`.
    pub decision_logs: Option<Vec<String>>,
}

/// `[check]`: which files `kapi check` reads as prose.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckConfig {
    /// Globs (globset syntax, matched against repository-relative paths with
    /// forward slashes) of the files that are prose. When unset:
    /// `**/*.md`, `**/*.markdown`, `**/*.mdx`, `**/*.txt`, `**/*.adoc`,
    /// `**/*.asciidoc`, `**/*.rst`, `**/*.rest`.
    pub prose: Option<Vec<String>>,
    /// Globs of files never checked, even if they match `prose`.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// `[[check.formats]]`: files whose format is named rather than read
    /// from their extension; the first entry whose globs match decides.
    #[serde(default)]
    pub formats: Vec<FormatEntry>,
}

/// `[[check.formats]]`: the format of the files some globs match.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatEntry {
    /// Globs, as `prose`'s.
    pub files: Vec<String>,
    /// `markdown`, `asciidoc`, `rst` or `text`.
    pub format: crate::check::markdown::TextKind,
}

impl CheckConfig {
    /// The default prose globs.
    pub const DEFAULT_PROSE: [&str; 8] = [
        "**/*.md",
        "**/*.markdown",
        "**/*.mdx",
        "**/*.txt",
        "**/*.adoc",
        "**/*.asciidoc",
        "**/*.rst",
        "**/*.rest",
    ];

    /// The prose globs in force.
    pub fn prose_globs(&self) -> Vec<String> {
        match &self.prose {
            Some(globs) => globs.clone(),
            None => Self::DEFAULT_PROSE.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Config {
    /// Read `kapi.toml` in `root`, or defaults when there is none.
    pub(crate) fn load(root: &Path) -> Result<Self, ConfigError> {
        let path = root.join(FILE_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::parse(&text).map_err(|source| ConfigError::Parse { path, source })
    }

    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// The vault folder relative to the work tree.
    pub fn vault_root(&self) -> PathBuf {
        self.vault
            .root
            .clone()
            .unwrap_or_else(|| PathBuf::from("decisions"))
    }
}

/// `[[compile]]`: one compiled-context artifact the project keeps, its
/// output path (relative to the work tree) and its recipe.
/// `kapi compile-context --all` regenerates them and
/// `kapi verify-context --all` verifies them.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompileEntry {
    pub output: PathBuf,
    #[serde(default)]
    pub targets: Vec<String>,
    pub query: Option<String>,
    /// `substring` (default) or `bm25`.
    pub ranking: Option<String>,
    pub max_docs: Option<usize>,
    pub max_bytes: Option<usize>,
    pub agent: Option<String>,
    /// Grant every label up to this one.
    pub max_sensitivity: Option<String>,
    /// Grant exactly these labels.
    pub allow: Option<Vec<String>>,
    /// A vault folder other than `[vault] root`.
    pub root: Option<PathBuf>,
    /// Pin the evaluation day (YYYY-MM-DD): the artifact is compiled and
    /// verified as of that day, so it does not go stale at midnight (only
    /// when the vault or the recipe changes). Unset: today in UTC.
    pub today: Option<String>,
}

/// `[context]`: the checkout's context files and the rules files kapi keeps.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    /// Term lists to import (`id<TAB>status<TAB>preferred<TAB>avoided|avoided`),
    /// paths or globs relative to the work tree.
    #[serde(default)]
    pub terms: Vec<String>,
    /// Read Vale vocabularies and substitution styles under `.vale.ini`'s
    /// `StylesPath` (default: true).
    pub vale: Option<bool>,
    /// Files whose managed block lists the rules and notes in force. Named
    /// here, a file is created when missing; by default `AGENTS.md` and
    /// `CLAUDE.md` are refreshed only where they exist; `[]` for none.
    pub rules_files: Option<Vec<String>>,
    /// What establishes a suggestion besides a person's keep: `"evidence"`
    /// (the default: a person's correction toward it, or the change
    /// reaching the default branch) or `"keep-only"` (every rule is kept
    /// by hand; settling establishes nothing and records no `establish`).
    #[serde(default)]
    pub settle: crate::ops::settle::Settling,
}

impl ContextConfig {
    /// The rules files kapi keeps, and whether they were named explicitly
    /// (then a missing one is created; the defaults are only refreshed
    /// where they exist).
    pub fn rules_files(&self) -> (Vec<String>, bool) {
        match &self.rules_files {
            Some(named) => (named.clone(), true),
            None => (vec!["AGENTS.md".into(), "CLAUDE.md".into()], false),
        }
    }
}
