//! Installing the hooks: the git hooks (the shims of the repository's
//! `hooks/` folder, written where `git rev-parse --git-path hooks` says),
//! Claude Code's SessionStart, PreToolUse (Bash), PostToolUse and Stop hooks in
//! `.claude/settings.json` (with `kapi mcp` registered in the project's
//! `.mcp.json`), and Codex's Stop hook in `.codex/hooks.json` (with `kapi
//! mcp` registered in the project's `.codex/config.toml`).
//!
//! Everything install writes is marked, so reinstalling is idempotent and
//! uninstall removes exactly what install added: a git hook of kapi's
//! carries the `kapi-hook` marker line; a foreign hook already in place is
//! kept beside it as `<hook>.pre-kapi`, run first by kapi's, and put back
//! by uninstall; an agent host's entries are the ones whose command is
//! `kapi hook <event>`, and a settings file or folder install created is
//! removed again when nothing else is left in it.

pub mod codex_config;
pub mod json;

use std::path::{Path, PathBuf};

use json::J;

use crate::git::{GitError, Repo};

/// The line that marks a git hook as kapi's.
pub const MARKER: &str = "# kapi-hook:";
/// The suffix a foreign hook is kept under while kapi's runs in its place.
pub const CHAINED: &str = ".pre-kapi";

/// The git hooks kapi installs, with their shims (the files of the
/// repository's `hooks/` folder).
pub const GIT_HOOKS: &[(&str, &str)] = &[
    ("pre-commit", include_str!("../../hooks/pre-commit")),
    ("post-merge", include_str!("../../hooks/post-merge")),
];

/// Where a shim names the kapi that installed it (shell-quoted).
const INSTALLED: &str = "@KAPI_INSTALLED@";

/// The kapi running now, by its absolute path: what a shim runs first.
fn this_kapi() -> PathBuf {
    std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .unwrap_or_else(|_| PathBuf::from("kapi"))
}

/// A shim as `kapi hooks install` writes it: `template` naming `kapi`.
fn shim_for(template: &str, kapi: &Path) -> String {
    let quoted = format!("'{}'", kapi.to_string_lossy().replace('\'', r"'\''"));
    template.replacen(INSTALLED, &quoted, 1)
}

/// Whether `text` is `template` written for some kapi, wherever it was.
fn is_shim(text: &str, template: &str) -> bool {
    let Some((before, after)) = template.split_once(INSTALLED) else {
        return text == template;
    };
    if text.len() < before.len() + after.len()
        || !text.starts_with(before)
        || !text.ends_with(after)
    {
        return false;
    }
    // One path, single-quoted as `shim_for` quotes it, and nothing else.
    let quoted = &text[before.len()..text.len() - after.len()];
    quoted
        .strip_prefix('\'')
        .and_then(|q| q.strip_suffix('\''))
        .is_some_and(|inner| !inner.contains('\n') && !inner.replace(r"'\''", "").contains('\''))
}

/// The `CLAUDE.md` install offers: Claude Code reads it, and it imports
/// the `AGENTS.md` other agents read.
pub const CLAUDE_MD: &str = "@AGENTS.md\n";

/// Claude Code's events: (event, matcher, command, timeout in seconds).
pub const CLAUDE_HOOKS: &[(&str, Option<&str>, &str, u32)] = &[
    ("SessionStart", None, "kapi hook claude-session-start", 30),
    // The shell door: refuses a Bash command only a person runs.
    ("PreToolUse", Some("Bash"), "kapi hook claude-pre-bash", 10),
    (
        "PostToolUse",
        Some("Edit|Write|MultiEdit"),
        "kapi hook claude-post-edit",
        30,
    ),
    ("Stop", None, "kapi hook claude-stop", 60),
];

/// The name kapi's MCP server is registered under, in `.mcp.json` and
/// in `.codex/config.toml`.
pub const MCP_SERVER: &str = "kapi";
/// How an agent host starts kapi's MCP server: `kapi mcp` over stdio.
pub const MCP_COMMAND: &str = "kapi";
pub const MCP_ARGS: &[&str] = &["mcp"];

/// kapi's entry in `.mcp.json`'s `mcpServers`.
fn mcp_entry() -> J {
    J::obj(&[
        ("type", J::str("stdio")),
        ("command", J::str(MCP_COMMAND)),
        ("args", J::Arr(MCP_ARGS.iter().map(|a| J::str(a)).collect())),
        ("env", J::Obj(Vec::new())),
    ])
}

/// Codex's events (its hooks.json has Claude Code's shape).
pub const CODEX_HOOKS: &[(&str, Option<&str>, &str, u32)] =
    &[("Stop", None, "kapi hook codex-stop", 60)];

/// Where hooks are installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Git,
    Claude,
    Codex,
}

impl Target {
    pub const DEFAULT: [Target; 2] = [Target::Git, Target::Claude];

    pub fn as_str(self) -> &'static str {
        match self {
            Target::Git => "git",
            Target::Claude => "claude",
            Target::Codex => "codex",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is not JSON kapi can edit ({message}); fix it, or add the hooks by hand (docs/hooks.md)",
        path.display()
    )]
    Settings { path: PathBuf, message: String },
    #[error(
        "{} is not a Codex config kapi can edit ({message}); fix it, or register kapi mcp by hand (docs/mcp.md)",
        path.display()
    )]
    CodexConfig { path: PathBuf, message: String },
    #[error(
        "{} and {} both exist and neither is kapi's: move one away, then install again",
        hook.display(), kept.display()
    )]
    Crowded { hook: PathBuf, kept: PathBuf },
    /// A hook or settings file that cannot be read as one: a FIFO, a
    /// device, a folder, or larger than the read cap.
    #[error("refusing to read {}: {source}; move it away, then run this again", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: crate::fsutil::FileError,
    },
}

fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> HooksError + 'p {
    move |source| HooksError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// One thing install or uninstall did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub target: Target,
    /// The hook or event.
    pub hook: String,
    pub path: PathBuf,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Written where nothing was.
    Installed,
    /// Written in place of a foreign hook, kept beside it and run first.
    Chained { kept: PathBuf },
    /// kapi's older hook replaced by this version's.
    Updated,
    /// Already installed as it would be.
    Unchanged,
    /// kapi's removed.
    Removed,
    /// kapi's removed and the foreign hook put back.
    Restored { from: PathBuf },
    /// Left alone: not kapi's.
    Foreign,
    /// Nothing of kapi's there.
    Absent,
    /// A file created to hold the hooks (a rules file, a settings file).
    Created,
}

/// What is in place for one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub target: Target,
    pub hook: String,
    pub path: PathBuf,
    pub state: State,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// kapi's, as this version writes it; `chained` when a foreign hook
    /// runs first.
    Installed { chained: Option<PathBuf> },
    /// kapi's, from another version: install again to update.
    Outdated,
    /// Not kapi's.
    Foreign,
    /// The file cannot be read as what it should be: why.
    Unreadable(String),
    /// Nothing there.
    Absent,
}

/// Install, status or uninstall in the repository at or above `dir`.
pub struct Hooks {
    repo: Repo,
    root: PathBuf,
}

impl Hooks {
    pub fn open(dir: &Path) -> Result<Self, HooksError> {
        let repo = Repo::discover(dir)?;
        let root = repo.require_work_tree()?.to_path_buf();
        Ok(Self { repo, root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Read every settings and config file installing `targets` edits, as
    /// the install will: an error here is what the install would meet
    /// after writing some of them.
    fn preflight(&self, targets: &[Target]) -> Result<(), HooksError> {
        for target in targets {
            match target {
                Target::Git => {}
                Target::Claude => {
                    read_settings(&self.claude_settings())?;
                    self.read_mcp_config()?;
                }
                Target::Codex => {
                    read_settings(&self.codex_settings())?;
                    self.install_codex_mcp()?;
                }
            }
        }
        Ok(())
    }

    /// The folder git runs hooks from.
    pub fn git_hooks_dir(&self) -> Result<PathBuf, HooksError> {
        Ok(self.repo.hooks_dir()?)
    }

    pub fn install(&self, targets: &[Target], dry_run: bool) -> Result<Vec<Change>, HooksError> {
        // Every file an install edits is read first: one kapi cannot read
        // or edit stops the install before anything is written.
        self.preflight(targets)?;
        let mut changes = Vec::new();
        for target in targets {
            match target {
                Target::Git => changes.extend(self.install_git(dry_run)?),
                Target::Claude => {
                    changes.extend(self.install_settings(
                        Target::Claude,
                        &self.claude_settings(),
                        CLAUDE_HOOKS,
                        dry_run,
                    )?);
                    changes.extend(self.install_mcp(dry_run)?);
                }
                Target::Codex => {
                    // config.toml is read first: one kapi cannot edit
                    // leaves hooks.json as it was too.
                    let (mcp, edit) = self.install_codex_mcp()?;
                    changes.extend(self.install_settings(
                        Target::Codex,
                        &self.codex_settings(),
                        CODEX_HOOKS,
                        dry_run,
                    )?);
                    if !dry_run {
                        self.write_codex_config(edit)?;
                    }
                    changes.extend(mcp);
                }
            }
        }
        Ok(changes)
    }

    pub fn uninstall(&self, targets: &[Target], dry_run: bool) -> Result<Vec<Change>, HooksError> {
        let mut changes = Vec::new();
        for target in targets {
            match target {
                Target::Git => changes.extend(self.uninstall_git(dry_run)?),
                Target::Claude => {
                    changes.extend(self.uninstall_settings(
                        Target::Claude,
                        &self.claude_settings(),
                        CLAUDE_HOOKS,
                        dry_run,
                    )?);
                    changes.extend(self.uninstall_mcp(dry_run)?);
                }
                Target::Codex => {
                    let (mcp, edit) = self.uninstall_codex_mcp()?;
                    changes.extend(self.uninstall_settings(
                        Target::Codex,
                        &self.codex_settings(),
                        CODEX_HOOKS,
                        dry_run,
                    )?);
                    if !dry_run {
                        self.write_codex_config(edit)?;
                    }
                    changes.extend(mcp);
                }
            }
        }
        Ok(changes)
    }

    pub fn status(&self) -> Result<Vec<Status>, HooksError> {
        let mut out = Vec::new();
        let dir = self.git_hooks_dir()?;
        for (name, shim) in GIT_HOOKS {
            let path = dir.join(name);
            let kept = dir.join(format!("{name}{CHAINED}"));
            let state = match read_optional(&path)? {
                None => State::Absent,
                Some(text) if is_shim(&text, shim) => State::Installed {
                    chained: is_there(&kept).then_some(kept),
                },
                Some(text) if is_kapis(&text) => State::Outdated,
                Some(_) => State::Foreign,
            };
            out.push(Status {
                target: Target::Git,
                hook: (*name).to_owned(),
                path,
                state,
            });
        }
        for (target, path, events) in [
            (Target::Claude, self.claude_settings(), CLAUDE_HOOKS),
            (Target::Codex, self.codex_settings(), CODEX_HOOKS),
        ] {
            // A file kapi cannot read is reported, and the rest still is.
            let settings = match read_settings(&path) {
                Ok(settings) => settings,
                Err(e) => {
                    for (event, ..) in events {
                        out.push(Status {
                            target,
                            hook: (*event).to_owned(),
                            path: path.clone(),
                            state: State::Unreadable(e.to_string()),
                        });
                    }
                    None
                }
            };
            let unreadable = out
                .last()
                .is_some_and(|s| s.path == path && matches!(s.state, State::Unreadable(_)));
            for (event, _, command, _) in events.iter().filter(|_| !unreadable) {
                let commands = settings
                    .as_ref()
                    .map(|s| event_commands(s, event))
                    .unwrap_or_default();
                let state = if commands.iter().any(|c| c == command) {
                    State::Installed { chained: None }
                } else if commands.iter().any(|c| c.starts_with("kapi hook ")) {
                    State::Outdated
                } else if !commands.is_empty() {
                    State::Foreign
                } else {
                    State::Absent
                };
                out.push(Status {
                    target,
                    hook: (*event).to_owned(),
                    path: path.clone(),
                    state,
                });
            }
            let (path, state) = match target {
                Target::Codex => (
                    self.codex_config(),
                    self.codex_mcp_state().map(|(_, state)| state),
                ),
                _ => (self.mcp_config(), self.mcp_state()),
            };
            let state = state.unwrap_or_else(|e| State::Unreadable(e.to_string()));
            out.push(Status {
                target,
                hook: "mcp server".into(),
                path,
                state,
            });
        }
        Ok(out)
    }

    /// `CLAUDE.md` at the top of the work tree, if it exists.
    pub fn claude_md(&self) -> Option<PathBuf> {
        let path = self.root.join("CLAUDE.md");
        path.exists().then_some(path)
    }

    /// Create `CLAUDE.md` importing `AGENTS.md` (Claude Code does not read
    /// `AGENTS.md` itself), unless it exists. It is the project's file from
    /// then on: uninstall leaves it.
    pub fn create_claude_md(&self, dry_run: bool) -> Result<Option<Change>, HooksError> {
        if self.claude_md().is_some() {
            return Ok(None);
        }
        let path = self.root.join("CLAUDE.md");
        if !dry_run {
            crate::atomic::replace(&path, CLAUDE_MD.as_bytes(), None)
                .map_err(io("write", &path))?;
        }
        Ok(Some(Change {
            target: Target::Claude,
            hook: "CLAUDE.md".into(),
            path,
            action: Action::Created,
        }))
    }

    fn mcp_config(&self) -> PathBuf {
        self.root.join(".mcp.json")
    }

    /// What `.mcp.json` holds under `mcpServers.kapi`.
    fn mcp_state(&self) -> Result<State, HooksError> {
        let Some(config) = read_settings(&self.mcp_config())? else {
            return Ok(State::Absent);
        };
        Ok(
            match config.get("mcpServers").and_then(|s| s.get(MCP_SERVER)) {
                None => State::Absent,
                Some(entry) if *entry == mcp_entry() => State::Installed { chained: None },
                Some(_) => State::Foreign,
            },
        )
    }

    /// Register `kapi mcp` in the project's `.mcp.json` (Claude Code's
    /// project-scoped servers), keeping every other server and key in
    /// order. An entry named `kapi` that is not kapi's is left alone.
    /// `.mcp.json`, when there is one, refused when its `mcpServers` is
    /// not an object (kapi could not add its server to it).
    fn read_mcp_config(&self) -> Result<Option<J>, HooksError> {
        let path = self.mcp_config();
        let config = read_settings(&path)?;
        if config
            .as_ref()
            .and_then(|c| c.get("mcpServers"))
            .is_some_and(|s| !matches!(s, J::Obj(_)))
        {
            return Err(servers_not_an_object(path));
        }
        Ok(config)
    }

    fn install_mcp(&self, dry_run: bool) -> Result<Vec<Change>, HooksError> {
        let path = self.mcp_config();
        let existing = self.read_mcp_config()?;
        let created = existing.is_none();
        let mut config = existing.unwrap_or(J::Obj(Vec::new()));
        let action = match self.mcp_state()? {
            State::Installed { .. } => Action::Unchanged,
            State::Foreign | State::Outdated | State::Unreadable(_) => Action::Foreign,
            State::Absent => {
                match config.entry("mcpServers", J::Obj(Vec::new())) {
                    Some(servers @ J::Obj(_)) => {
                        servers.entry(MCP_SERVER, mcp_entry());
                    }
                    _ => return Err(servers_not_an_object(path)),
                }
                if !dry_run {
                    write_settings(&path, &config)?;
                }
                Action::Installed
            }
        };
        let mut changes = vec![Change {
            target: Target::Claude,
            hook: "mcp server".into(),
            path: path.clone(),
            action: action.clone(),
        }];
        if created && action == Action::Installed {
            changes.push(Change {
                target: Target::Claude,
                hook: "mcp config".into(),
                path,
                action: Action::Created,
            });
        }
        Ok(changes)
    }

    /// Remove kapi's entry from `.mcp.json`, and the file when nothing
    /// else is left in it; another server, or a `kapi` entry that is not
    /// kapi's, stays as it was.
    fn uninstall_mcp(&self, dry_run: bool) -> Result<Vec<Change>, HooksError> {
        let path = self.mcp_config();
        let action = match self.mcp_state()? {
            State::Absent => Action::Absent,
            State::Foreign | State::Outdated | State::Unreadable(_) => Action::Foreign,
            State::Installed { .. } => {
                let mut config = read_settings(&path)?.unwrap_or(J::Obj(Vec::new()));
                if let Some(servers) = config.get_mut("mcpServers") {
                    servers.remove(MCP_SERVER);
                    if servers.is_empty_container() {
                        config.remove("mcpServers");
                    }
                }
                if !dry_run {
                    if config.is_empty_container() {
                        std::fs::remove_file(&path).map_err(io("remove", &path))?;
                    } else {
                        write_settings(&path, &config)?;
                    }
                }
                Action::Removed
            }
        };
        Ok(vec![Change {
            target: Target::Claude,
            hook: "mcp server".into(),
            path,
            action,
        }])
    }

    fn codex_config(&self) -> PathBuf {
        self.root.join(".codex").join("config.toml")
    }

    /// `.codex/config.toml`'s text (`None` when there is none) and what
    /// it holds under `mcp_servers.kapi`.
    fn codex_mcp_state(&self) -> Result<(Option<String>, State), HooksError> {
        let path = self.codex_config();
        let Some(text) = read_codex_config(&path)? else {
            return Ok((None, State::Absent));
        };
        let state = match codex_config::server(&text).map_err(codex_error(&path))? {
            codex_config::Server::Absent => State::Absent,
            codex_config::Server::Kapis => State::Installed { chained: None },
            codex_config::Server::Foreign => State::Foreign,
        };
        Ok((Some(text), state))
    }

    /// What registering `kapi mcp` in `.codex/config.toml` changes, and
    /// the edit that does it (written by [`Self::write_codex_config`]):
    /// kapi's table appended, the rest of the file byte for byte as it
    /// was; the file (and `.codex/`) created when there is none. A `kapi`
    /// server that is not kapi's is left alone.
    fn install_codex_mcp(&self) -> Result<(Vec<Change>, ConfigEdit), HooksError> {
        let path = self.codex_config();
        let (text, state) = self.codex_mcp_state()?;
        let created = text.is_none();
        let (action, edit) = match state {
            State::Installed { .. } => (Action::Unchanged, ConfigEdit::None),
            State::Foreign | State::Outdated | State::Unreadable(_) => {
                (Action::Foreign, ConfigEdit::None)
            }
            State::Absent => {
                match codex_config::add(text.as_deref().unwrap_or(""))
                    .map_err(codex_error(&path))?
                {
                    Some(added) => (Action::Installed, ConfigEdit::Write(added)),
                    None => (Action::Foreign, ConfigEdit::None),
                }
            }
        };
        let mut changes = vec![Change {
            target: Target::Codex,
            hook: "mcp server".into(),
            path: path.clone(),
            action: action.clone(),
        }];
        if created && action == Action::Installed {
            changes.push(Change {
                target: Target::Codex,
                hook: "mcp config".into(),
                path,
                action: Action::Created,
            });
        }
        Ok((changes, edit))
    }

    /// What unregistering `kapi mcp` from `.codex/config.toml` changes,
    /// and the edit: exactly what install added taken off, and the file
    /// removed when only whitespace is left.
    fn uninstall_codex_mcp(&self) -> Result<(Vec<Change>, ConfigEdit), HooksError> {
        let path = self.codex_config();
        let (text, state) = self.codex_mcp_state()?;
        let (action, edit) = match (state, text) {
            (State::Installed { .. }, Some(text)) => {
                match codex_config::remove(&text).map_err(codex_error(&path))? {
                    Some(rest) if rest.trim().is_empty() => (Action::Removed, ConfigEdit::Remove),
                    Some(rest) => (Action::Removed, ConfigEdit::Write(rest)),
                    None => (Action::Absent, ConfigEdit::None),
                }
            }
            (State::Foreign | State::Outdated, _) => (Action::Foreign, ConfigEdit::None),
            _ => (Action::Absent, ConfigEdit::None),
        };
        let change = Change {
            target: Target::Codex,
            hook: "mcp server".into(),
            path,
            action,
        };
        Ok((vec![change], edit))
    }

    fn write_codex_config(&self, edit: ConfigEdit) -> Result<(), HooksError> {
        let path = self.codex_config();
        match edit {
            ConfigEdit::None => {}
            ConfigEdit::Write(text) => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(io("create", parent))?;
                }
                write_file(&path, text.as_bytes())?;
            }
            ConfigEdit::Remove => {
                std::fs::remove_file(&path).map_err(io("remove", &path))?;
                // `.codex/` too, when nothing else is in it.
                if let Some(parent) = path.parent() {
                    let _ = std::fs::remove_dir(parent);
                }
            }
        }
        Ok(())
    }

    fn claude_settings(&self) -> PathBuf {
        self.root.join(".claude").join("settings.json")
    }

    fn codex_settings(&self) -> PathBuf {
        self.root.join(".codex").join("hooks.json")
    }

    fn install_git(&self, dry_run: bool) -> Result<Vec<Change>, HooksError> {
        let dir = self.git_hooks_dir()?;
        let kapi = this_kapi();
        let mut changes = Vec::new();
        for (name, shim) in GIT_HOOKS {
            let path = dir.join(name);
            let kept = dir.join(format!("{name}{CHAINED}"));
            let action = match read_optional(&path)? {
                // Another kapi's shim is written again for this one.
                Some(text) if text == shim_for(shim, &kapi) => Action::Unchanged,
                Some(text) if is_kapis(&text) => Action::Updated,
                // A link to nothing is still there: it is never replaced.
                Some(_) if is_there(&kept) => {
                    return Err(HooksError::Crowded { hook: path, kept });
                }
                Some(_) => Action::Chained { kept: kept.clone() },
                None => Action::Installed,
            };
            changes.push(Change {
                target: Target::Git,
                hook: (*name).to_owned(),
                path,
                action,
            });
        }
        // Every hook was looked at before any is written: a refusal leaves
        // nothing half installed.
        if !dry_run {
            for (change, (_, shim)) in changes.iter().zip(GIT_HOOKS) {
                let path = &change.path;
                match &change.action {
                    Action::Chained { kept } => {
                        std::fs::rename(path, kept).map_err(io("keep", path))?;
                        write_executable(path, &shim_for(shim, &kapi))?;
                    }
                    Action::Installed | Action::Updated => {
                        std::fs::create_dir_all(&dir).map_err(io("create", &dir))?;
                        write_executable(path, &shim_for(shim, &kapi))?;
                    }
                    _ => {}
                }
            }
        }
        Ok(changes)
    }

    fn uninstall_git(&self, dry_run: bool) -> Result<Vec<Change>, HooksError> {
        let dir = self.git_hooks_dir()?;
        let mut changes = Vec::new();
        for (name, _) in GIT_HOOKS {
            let path = dir.join(name);
            let kept = dir.join(format!("{name}{CHAINED}"));
            let action = match read_optional(&path)? {
                Some(text) if is_kapis(&text) => {
                    if is_there(&kept) {
                        Action::Restored { from: kept.clone() }
                    } else {
                        Action::Removed
                    }
                }
                Some(_) => Action::Foreign,
                None => Action::Absent,
            };
            if !dry_run {
                match &action {
                    Action::Removed => std::fs::remove_file(&path).map_err(io("remove", &path))?,
                    Action::Restored { from } => {
                        std::fs::rename(from, &path).map_err(io("restore", from))?
                    }
                    _ => {}
                }
            }
            changes.push(Change {
                target: Target::Git,
                hook: (*name).to_owned(),
                path,
                action,
            });
        }
        Ok(changes)
    }

    fn install_settings(
        &self,
        target: Target,
        path: &Path,
        events: &[(&str, Option<&str>, &str, u32)],
        dry_run: bool,
    ) -> Result<Vec<Change>, HooksError> {
        let existing = read_settings(path)?;
        let created = existing.is_none();
        let mut settings = existing.unwrap_or(J::Obj(Vec::new()));
        let mut changes = Vec::new();
        let mut changed = false;
        for (event, matcher, command, timeout) in events {
            let action = if event_commands(&settings, event)
                .iter()
                .any(|c| c == command)
            {
                Action::Unchanged
            } else {
                // An older kapi command for this event goes first.
                remove_commands(&mut settings, event, |c| c.starts_with("kapi hook "));
                let mut hook = vec![
                    ("type".to_owned(), J::str("command")),
                    ("command".to_owned(), J::str(command)),
                ];
                if target == Target::Claude {
                    hook.push(("timeout".to_owned(), J::Num((*timeout).into())));
                }
                let mut group = Vec::new();
                if let Some(m) = matcher {
                    group.push(("matcher".to_owned(), J::str(m)));
                }
                group.push(("hooks".to_owned(), J::Arr(vec![J::Obj(hook)])));
                let list = settings
                    .entry("hooks", J::Obj(Vec::new()))
                    .and_then(|h| h.entry(event, J::Arr(Vec::new())));
                match list {
                    Some(J::Arr(groups)) => groups.push(J::Obj(group)),
                    _ => {
                        return Err(HooksError::Settings {
                            path: path.to_path_buf(),
                            message: format!("`hooks.{event}` is not a list"),
                        });
                    }
                }
                changed = true;
                Action::Installed
            };
            changes.push(Change {
                target,
                hook: (*event).to_owned(),
                path: path.to_path_buf(),
                action,
            });
        }
        if changed && !dry_run {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io("create", parent))?;
            }
            write_settings(path, &settings)?;
        }
        if changed && created {
            changes.push(Change {
                target,
                hook: "settings".into(),
                path: path.to_path_buf(),
                action: Action::Created,
            });
        }
        Ok(changes)
    }

    fn uninstall_settings(
        &self,
        target: Target,
        path: &Path,
        events: &[(&str, Option<&str>, &str, u32)],
        dry_run: bool,
    ) -> Result<Vec<Change>, HooksError> {
        let Some(mut settings) = read_settings(path)? else {
            return Ok(events
                .iter()
                .map(|(event, ..)| Change {
                    target,
                    hook: (*event).to_owned(),
                    path: path.to_path_buf(),
                    action: Action::Absent,
                })
                .collect());
        };
        let mut changes = Vec::new();
        let mut changed = false;
        for (event, ..) in events {
            let removed = remove_commands(&mut settings, event, |c| c.starts_with("kapi hook "));
            changed |= removed;
            changes.push(Change {
                target,
                hook: (*event).to_owned(),
                path: path.to_path_buf(),
                action: if removed {
                    Action::Removed
                } else {
                    Action::Absent
                },
            });
        }
        if changed && !dry_run {
            if settings.is_empty_container() {
                std::fs::remove_file(path).map_err(io("remove", path))?;
                // The folder too, when install made it and nothing else is in it.
                if let Some(parent) = path.parent() {
                    let _ = std::fs::remove_dir(parent);
                }
            } else {
                write_settings(path, &settings)?;
            }
        }
        Ok(changes)
    }
}

/// What install or uninstall does to `.codex/config.toml`.
enum ConfigEdit {
    None,
    Write(String),
    Remove,
}

/// Whether a hook file is one kapi wrote.
fn is_kapis(text: &str) -> bool {
    text.lines().any(|l| l.starts_with(MARKER))
}

fn servers_not_an_object(path: PathBuf) -> HooksError {
    HooksError::Settings {
        path,
        message: "`mcpServers` is not an object".into(),
    }
}

/// Whether anything is at `path`, a symbolic link leading nowhere included.
fn is_there(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// A hook or settings file's bytes, `None` when nothing is there. A link
/// is followed (hooks and settings are often links into the repository);
/// a link leading nowhere is there, as its own empty content, so it is
/// never taken for a free place and written over. What is not a regular
/// file, or is larger than the read cap, is refused without blocking.
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, HooksError> {
    use crate::fsutil::{FileError, Links, read_optional};
    match read_optional(path, Links::Follow) {
        Ok(Some(bytes)) => Ok(Some(bytes)),
        Ok(None) if is_there(path) => Ok(Some(Vec::new())),
        Ok(None) => Ok(None),
        Err(FileError::Io(source)) => Err(HooksError::Io {
            what: "read",
            path: path.to_path_buf(),
            source,
        }),
        Err(source) => Err(HooksError::Unreadable {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A git hook's text (bytes that are not UTF-8 replaced: a hook is only
/// compared with kapi's shims and kept or renamed, never rewritten).
fn read_optional(path: &Path) -> Result<Option<String>, HooksError> {
    Ok(read_bytes(path)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

fn write_executable(path: &Path, text: &str) -> Result<(), HooksError> {
    #[cfg(unix)]
    let permissions = {
        use std::os::unix::fs::PermissionsExt;
        Some(std::fs::Permissions::from_mode(0o755))
    };
    #[cfg(not(unix))]
    let permissions = None;
    crate::atomic::replace(path, text.as_bytes(), permissions).map_err(io("write", path))
}

fn write_settings(path: &Path, settings: &J) -> Result<(), HooksError> {
    write_file(path, settings.to_pretty().as_bytes())
}

/// Replace a settings or config file whole, through a link to its
/// target, keeping its permissions.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), HooksError> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    crate::atomic::replace(&target, bytes, permissions).map_err(io("write", path))
}

/// `.codex/config.toml`'s text; `None` when there is none. TOML is UTF-8.
fn read_codex_config(path: &Path) -> Result<Option<String>, HooksError> {
    let Some(bytes) = read_bytes(path)? else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| HooksError::CodexConfig {
            path: path.to_path_buf(),
            message: format!(
                "it is not UTF-8: the bytes at offset {} are not",
                e.utf8_error().valid_up_to()
            ),
        })
}

fn codex_error(path: &Path) -> impl FnOnce(codex_config::ConfigError) -> HooksError + '_ {
    move |e| HooksError::CodexConfig {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// A settings file, parsed; `None` when there is none. Its bytes must be
/// UTF-8: a file kapi rewrites is never read with anything replaced.
fn read_settings(path: &Path) -> Result<Option<J>, HooksError> {
    let Some(bytes) = read_bytes(path)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|e| HooksError::Settings {
        path: path.to_path_buf(),
        message: format!(
            "it is not UTF-8: the bytes at offset {} are not",
            e.utf8_error().valid_up_to()
        ),
    })?;
    let value: J = serde_json::from_str(&text).map_err(|e| HooksError::Settings {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if !matches!(value, J::Obj(_)) {
        return Err(HooksError::Settings {
            path: path.to_path_buf(),
            message: "the top level is not an object".into(),
        });
    }
    Ok(Some(value))
}

/// The commands the settings run for `event`.
fn event_commands(settings: &J, event: &str) -> Vec<String> {
    let Some(J::Arr(groups)) = settings.get("hooks").and_then(|h| h.get(event)) else {
        return Vec::new();
    };
    groups
        .iter()
        .filter_map(|g| match g.get("hooks") {
            Some(J::Arr(hooks)) => Some(hooks),
            _ => None,
        })
        .flatten()
        .filter_map(|h| h.get("command").and_then(J::as_str).map(str::to_owned))
        .collect()
}

/// Remove the hooks of `event` whose command `is_ours` says, then the
/// groups, the event and the `hooks` object left empty. Whether any was.
fn remove_commands(settings: &mut J, event: &str, is_ours: impl Fn(&str) -> bool) -> bool {
    let Some(hooks) = settings.get_mut("hooks") else {
        return false;
    };
    let Some(J::Arr(groups)) = hooks.get_mut(event) else {
        return false;
    };
    let mut removed = false;
    for group in groups.iter_mut() {
        if let Some(J::Arr(list)) = group.get_mut("hooks") {
            let before = list.len();
            list.retain(|h| !h.get("command").and_then(J::as_str).is_some_and(&is_ours));
            if list.len() != before {
                removed = true;
            }
        }
    }
    if removed {
        groups.retain(|g| !matches!(g.get("hooks"), Some(J::Arr(l)) if l.is_empty()));
        if groups.is_empty() {
            hooks.remove(event);
        }
        if hooks.is_empty_container() {
            settings.remove("hooks");
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_hosts_settings_lose_exactly_what_install_added() {
        let before = "{\n  \"permissions\": {\n    \"allow\": []\n  },\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./mine.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
        let mut settings: J = serde_json::from_str(before).unwrap();
        let list = settings
            .entry("hooks", J::Obj(Vec::new()))
            .and_then(|h| h.entry("Stop", J::Arr(Vec::new())));
        if let Some(J::Arr(groups)) = list {
            groups.push(J::obj(&[(
                "hooks",
                J::Arr(vec![J::obj(&[(
                    "command",
                    J::str("kapi hook claude-stop"),
                )])]),
            )]));
        }
        assert_eq!(
            event_commands(&settings, "Stop"),
            ["./mine.sh", "kapi hook claude-stop"]
        );
        assert!(remove_commands(&mut settings, "Stop", |c| c.starts_with("kapi hook ")));
        assert_eq!(settings.to_pretty(), before);
        assert!(!remove_commands(&mut settings, "Stop", |c| c.starts_with("kapi hook ")));
    }

    #[test]
    fn the_shims_carry_the_marker_and_call_their_event() {
        for (name, shim) in GIT_HOOKS {
            assert!(is_kapis(shim), "{name}");
            assert!(shim.contains(&format!("hook={name}\n")), "{name}");
            assert_eq!(shim.matches(INSTALLED).count(), 1, "{name}");
        }
    }

    #[test]
    fn a_shim_names_its_kapi_shell_quoted_and_is_known_wherever_that_was() {
        let (_, template) = GIT_HOOKS[0];
        let odd = Path::new("/opt/it's here/kapi");
        let shim = shim_for(template, odd);
        assert!(
            shim.contains("installed='/opt/it'\\''s here/kapi'\n"),
            "{shim}"
        );
        assert!(is_shim(&shim, template));
        assert!(is_shim(
            &shim_for(template, Path::new("/usr/bin/kapi")),
            template
        ));
        // What sh makes of the quoted path is the path.
        let line = shim.lines().find(|l| l.starts_with("installed=")).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("{line}; printf %s \"$installed\"")])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "/opt/it's here/kapi");
        // Another line where the path goes is not kapi's shim.
        for tampered in ["installed=x\nrm -rf /", "installed='/x'; rm -rf /; ''"] {
            let text = shim.replace("installed='/opt/it'\\''s here/kapi'", tampered);
            assert!(!is_shim(&text, template), "{text}");
        }
    }
}
