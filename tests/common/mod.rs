//! The one hermetic test environment every suite uses (after jj's
//! `TestEnvironment` and ripgrep's `tests/util.rs`).
//!
//! Each [`TestEnv`] owns a temporary root holding `home/` (HOME and
//! XDG_CONFIG_HOME) and `work/` (the folder commands run in, a git
//! repository unless made with [`TestEnv::plain`]). Every command it builds,
//! kapi or git:
//!
//! - drops every `KAPI_*` and `GIT_*` variable of the test process (so
//!   `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`,
//!   `GIT_COMMON_DIR`, `GIT_CONFIG_*`… of a hook or of the shell running
//!   `cargo test` never leak in), `CLAUDECODE`, `EMAIL` and `COLUMNS` (help
//!   wraps to it);
//! - sets `GIT_CEILING_DIRECTORIES` to the root, so neither git nor kapi
//!   walks up into the checkout holding `TMPDIR`;
//! - isolates HOME, XDG_CONFIG_HOME and the system git config, and pins
//!   `TZ`, `GIT_AUTHOR_DATE` and `GIT_COMMITTER_DATE`;
//! - pins kapi's clock and seed (`KAPI_NOW`, `KAPI_SEED`) and puts the
//!   folder of the binary under test first on `PATH`, so a git hook kapi
//!   installed (which runs `kapi` from `PATH`, or `$KAPI`, cleared too)
//!   runs the binary under test on the pinned clock, never a `kapi`
//!   installed on the machine.
//!
//! A test that wants the real clock or seed removes them from the command.
//! [`TestEnv::transcript`] renders a run for a snapshot with the temporary
//! root replaced by `[ROOT]`; a [`Transcript`] renders a scenario, every
//! step under the command line that ran it.
//!
//! The binary under test is `env!("CARGO_BIN_EXE_kapi")`, the path cargo
//! gives every integration test: the harness runs it through
//! [`std::process::Command`] and reads a [`Run`], so `assert_cmd` would add
//! nothing but that path.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The pinned clock of every kapi command.
pub const NOW: &str = "2026-11-30T09:00:00Z";
/// The pinned random seed of every kapi command.
pub const SEED: &str = "7";
/// The pinned author and committer date of every git and kapi command.
pub const GIT_DATE: &str = "2026-11-30T00:00:00Z";

/// Variables cleared even when the test process does not have them now
/// (a test may set them later on a command, never by accident).
const CLEARED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "EMAIL",
    "CLAUDECODE",
    "KAPI_NOW",
    "KAPI_SEED",
    "KAPI_AGENT",
    "KAPI_SESSION",
    "KAPI_TOOL",
    "KAPI_FAULT",
    // Colour is asked for by each test that wants it.
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "KAPI_LOCK_TIMEOUT_MS",
    "KAPI_BLESS",
    // The installed hooks run `$KAPI` when it is set.
    "KAPI",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    // clap wraps help to it: a snapshot of --help must not follow the
    // terminal of whoever runs the tests.
    "COLUMNS",
];

/// True for a variable of the test process no command may inherit.
fn is_leaky(name: &OsString) -> bool {
    let name = name.to_string_lossy();
    name.starts_with("KAPI_") || name.starts_with("GIT_") || CLEARED.contains(&name.as_ref())
}

/// The binary under test, built by cargo for the integration tests.
pub fn kapi_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kapi"))
}

/// The test process's `PATH` with the folder of the binary under test
/// first: what every command of a [`TestEnv`] runs with.
pub fn path_with_kapi_first() -> OsString {
    let dir = kapi_bin().parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).unwrap()
}

/// A temporary home and work folder, and the commands run in them.
pub struct TestEnv {
    /// Shared with the siblings made by [`TestEnv::sibling`].
    root: std::sync::Arc<tempfile::TempDir>,
    /// `root` canonicalized: what kapi and git print.
    real_root: PathBuf,
    work: PathBuf,
    home: PathBuf,
}

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// stdout as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{e}\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl TestEnv {
    /// A fresh repository with a person's identity configured (Ada).
    pub fn new() -> Self {
        let env = Self::without_identity();
        env.git(&["config", "user.email", "ada@example.com"]);
        env.git(&["config", "user.name", "Ada"]);
        env
    }

    /// A fresh repository with no identity at all.
    pub fn without_identity() -> Self {
        let env = Self::fresh();
        env.git(&["init", "-q", "-b", "main"]);
        env
    }

    /// A plain folder, inside no repository.
    ///
    /// kapi looks for the project and the vault lock by walking up to the
    /// nearest `.git` without heeding `GIT_CEILING_DIRECTORIES`, so a plain
    /// folder is only plain when no folder above the temporary directory
    /// holds one: this panics, naming it, rather than let a test read or
    /// lock the checkout that holds `TMPDIR`.
    pub fn plain() -> Self {
        let env = Self::fresh();
        if let Some(above) = env.real_root.ancestors().find(|d| d.join(".git").exists()) {
            panic!(
                "the temporary directory {} lies inside the git work tree {}: \
                 set TMPDIR outside any repository to run the tests that need a plain folder",
                env.real_root.display(),
                above.display()
            );
        }
        env
    }

    /// A temporary root with empty `work/` and `home/` folders.
    fn fresh() -> Self {
        let root = tempfile::tempdir().unwrap();
        let real_root = root.path().canonicalize().unwrap();
        let work = real_root.join("work");
        let home = real_root.join("home");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(&home).unwrap();
        TestEnv {
            root: std::sync::Arc::new(root),
            real_root,
            work,
            home,
        }
    }

    /// A second repository (with Ada's identity) beside this one, in
    /// `<root>/<name>`, sharing its home: two checkouts of one machine, as
    /// the workspace sees them.
    pub fn sibling(&self, name: &str) -> Self {
        let work = self.real_root.join(name);
        std::fs::create_dir(&work).unwrap();
        let env = TestEnv {
            root: std::sync::Arc::clone(&self.root),
            real_root: self.real_root.clone(),
            work,
            home: self.home.clone(),
        };
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["config", "user.email", "ada@example.com"]);
        env.git(&["config", "user.name", "Ada"]);
        env
    }

    /// The work folder, where commands run.
    pub fn path(&self) -> &Path {
        &self.work
    }

    /// A path inside the work folder.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.work.join(rel)
    }

    /// The temporary root holding `work/` and `home/`: the git ceiling.
    pub fn root(&self) -> &Path {
        &self.real_root
    }

    /// Make `cmd` hermetic: no inherited repository, identity, agent or
    /// kapi variable; isolated home and config; pinned git dates, kapi
    /// clock and seed; the binary under test first on `PATH` (for the
    /// hooks git runs); run in the work folder.
    pub fn isolate(&self, cmd: &mut Command) {
        for (name, _) in std::env::vars_os() {
            if is_leaky(&name) {
                cmd.env_remove(name);
            }
        }
        for name in CLEARED {
            cmd.env_remove(name);
        }
        cmd.current_dir(&self.work)
            .env("GIT_CEILING_DIRECTORIES", &self.real_root)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_DATE", GIT_DATE)
            .env("GIT_COMMITTER_DATE", GIT_DATE)
            .env("TZ", "UTC")
            .env("KAPI_NOW", NOW)
            .env("KAPI_SEED", SEED)
            .env("PATH", path_with_kapi_first());
    }

    /// A kapi command as a person, with the clock and seed pinned.
    pub fn kapi_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kapi_bin());
        self.isolate(&mut cmd);
        cmd.args(args);
        cmd
    }

    pub fn kapi(&self, args: &[&str]) -> Run {
        self.kapi_cmd(args).output().unwrap().into()
    }

    /// A kapi command run in `rel`, a folder inside the work folder.
    pub fn kapi_in(&self, rel: &str, args: &[&str]) -> Run {
        self.kapi_cmd(args)
            .current_dir(self.join(rel))
            .output()
            .unwrap()
            .into()
    }

    /// A kapi command with `input` on stdin.
    pub fn kapi_stdin(&self, args: &[&str], input: &[u8]) -> Run {
        piped(self.kapi_cmd(args), input).into()
    }

    /// A kapi command as the agent `claude-code` in `session`.
    pub fn agent(&self, session: &str, args: &[&str]) -> Run {
        self.kapi_cmd(args)
            .env("CLAUDECODE", "1")
            .env("KAPI_SESSION", session)
            .output()
            .unwrap()
            .into()
    }

    /// The agent `claude-code` in `session` notes a term rule:
    /// `kapi context note --term TERM --instead-of FORM ...extra`.
    pub fn agent_term(&self, session: &str, term: &str, instead_of: &str, extra: &[&str]) -> Run {
        self.agent(session, &term_args(term, instead_of, extra))
    }

    /// The log as `kapi context log --json` gives it, one value per
    /// operation.
    pub fn log(&self) -> Vec<serde_json::Value> {
        self.kapi(&["context", "log", "--json"]).ok().json_lines()
    }

    /// The ids of [`TestEnv::log`], in its order.
    pub fn log_ids(&self) -> Vec<String> {
        self.log()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// A person notes the term rule `term`, not `avoided`, quoting
    /// `avoided` as evidence: a suggestion. Its short id.
    pub fn suggested_rule(&self, term: &str, avoided: &str) -> String {
        let args = term_args(term, avoided, &["--quote", avoided, "--json"]);
        let op = self.kapi(&args).ok().json();
        op["id"].as_str().unwrap()[..10].to_owned()
    }

    /// The agent `claude-code` in `session` suggests the term rule `term`,
    /// not `avoided`, seen in the file `path`. Its id.
    pub fn agent_rule_at(&self, session: &str, term: &str, avoided: &str, path: &str) -> String {
        let run = self
            .agent_term(session, term, avoided, &["--path", path, "--json"])
            .ok();
        let op: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
        op["id"].as_str().unwrap().to_owned()
    }

    /// [`TestEnv::suggested_rule`], kept by the person: it fails checks.
    /// Its short id.
    pub fn kept_rule(&self, term: &str, avoided: &str) -> String {
        let short = self.suggested_rule(term, avoided);
        self.kapi(&["context", "review", "--keep", &short]).ok();
        short
    }

    /// A hermetic git command in the work folder.
    pub fn git_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        self.isolate(&mut cmd);
        cmd.args(args);
        cmd
    }

    /// git, which must succeed; its trimmed stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = self.git_cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// git with bytes on stdin, which must succeed; its trimmed stdout.
    pub fn git_stdin(&self, args: &[&str], input: &[u8]) -> String {
        let out = piped(self.git_cmd(args), input);
        assert!(out.status.success(), "git {args:?} failed");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    pub fn write(&self, rel: &str, text: &str) {
        self.write_bytes(rel, text.as_bytes());
    }

    pub fn write_bytes(&self, rel: &str, bytes: &[u8]) {
        let path = self.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// A bare repository `<root>/remote.git` on branch `main`, beside the
    /// work folder (inside the root, so a transcript prints it normalized).
    pub fn bare_remote(&self) -> PathBuf {
        let remote = self.real_root.join("remote.git");
        let path = remote.to_str().unwrap();
        self.git(&["init", "-q", "--bare", "-b", "main", path]);
        remote
    }

    /// `git remote add origin REMOTE`.
    pub fn add_origin(&self, remote: &Path) {
        self.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    }

    /// Commit everything in the work folder as "Initial docs", add
    /// `remote` as `origin` and push `main` to it.
    pub fn publish(&self, remote: &Path) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", "Initial docs"]);
        self.add_origin(remote);
        self.git(&["push", "-q", "origin", "main"]);
    }

    /// A checkout of `remote`'s `main` on another machine (its own home),
    /// as the person `name` <`email`>.
    pub fn clone_of(remote: &Path, name: &str, email: &str) -> Self {
        let env = Self::without_identity();
        env.git(&["config", "user.email", email]);
        env.git(&["config", "user.name", name]);
        env.add_origin(remote);
        env.git(&["fetch", "-q", "origin", "main"]);
        env.git(&["checkout", "-q", "-B", "main", "FETCH_HEAD"]);
        env
    }

    /// `text` with the temporary root (as given and as canonicalized)
    /// replaced by `[ROOT]`, so a snapshot reads the same on any machine.
    pub fn normalize(&self, text: &str) -> String {
        self.normalize_as(text, "[ROOT]")
    }

    /// `text` with the temporary root replaced by `token`.
    fn normalize_as(&self, text: &str, token: &str) -> String {
        let mut text = text.replace(&*self.real_root.to_string_lossy(), token);
        text = text.replace(&*self.root.path().to_string_lossy(), token);
        text
    }

    /// A run as one text for a snapshot: exit code, stdout and stderr,
    /// normalized.
    pub fn transcript(&self, run: &Run) -> String {
        self.normalize(&format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            run.code, run.stdout, run.stderr
        ))
    }
}

/// A scenario as one text for a snapshot (after trycmd's `.trycmd` files):
/// each step is the command line that ran it, then its exit code, stdout
/// and stderr. The temporary root of the first environment a step ran in
/// reads `[ROOT]`, the next ones `[ROOT2]`, `[ROOT3]`…; a step run in
/// another folder than the first one's work folder names it before its
/// `$`.
#[derive(Default)]
pub struct Transcript {
    /// Every environment a step ran in or [`Transcript::knows`], one per
    /// root: how to normalize them.
    envs: Vec<TestEnv>,
    /// The first environment's work folder.
    home_work: Option<PathBuf>,
    /// What [`Transcript::text`] replaces besides the roots: a pid, a
    /// real clock's id.
    redactions: Vec<(String, String)>,
    text: String,
}

impl Transcript {
    pub fn new() -> Self {
        Self::default()
    }

    /// Normalize `env`'s root too, though no step runs in it.
    pub fn knows(&mut self, env: &TestEnv) -> &mut Self {
        if !self.envs.iter().any(|e| e.real_root == env.real_root) {
            self.envs.push(TestEnv {
                root: std::sync::Arc::clone(&env.root),
                real_root: env.real_root.clone(),
                work: env.work.clone(),
                home: env.home.clone(),
            });
        }
        self.home_work.get_or_insert_with(|| env.work.clone());
        self
    }

    /// `kapi ARGS` as a person in `env`, recorded.
    pub fn kapi(&mut self, env: &TestEnv, args: &[&str]) -> Run {
        let run = env.kapi(args);
        self.step(env, &format!("kapi {}", shell_words(args)), run)
    }

    /// `kapi ARGS` as the agent `claude-code` in `session`, recorded.
    pub fn agent(&mut self, env: &TestEnv, session: &str, args: &[&str]) -> Run {
        let run = env.agent(session, args);
        let line = format!(
            "CLAUDECODE=1 KAPI_SESSION={session} kapi {}",
            shell_words(args)
        );
        self.step(env, &line, run)
    }

    /// [`TestEnv::agent_term`], recorded.
    pub fn agent_term(
        &mut self,
        env: &TestEnv,
        session: &str,
        term: &str,
        instead_of: &str,
        extra: &[&str],
    ) -> Run {
        self.agent(env, session, &term_args(term, instead_of, extra))
    }

    /// A person notes a term rule (`kapi context note --term TERM
    /// --instead-of FORM ...extra`), recorded.
    pub fn kapi_term(
        &mut self,
        env: &TestEnv,
        term: &str,
        instead_of: &str,
        extra: &[&str],
    ) -> Run {
        self.kapi(env, &term_args(term, instead_of, extra))
    }

    /// `kapi ARGS` as a person in `env` with `input` on stdin, recorded.
    pub fn kapi_stdin(&mut self, env: &TestEnv, args: &[&str], input: &[u8]) -> Run {
        let run = env.kapi_stdin(args, input);
        self.step(
            env,
            &fed(input, &format!("kapi {}", shell_words(args))),
            run,
        )
    }

    /// A run made some other way, recorded under the command line `line`
    /// (what follows the `$`); given back.
    pub fn step(&mut self, env: &TestEnv, line: &str, run: Run) -> Run {
        self.knows(env);
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        if self.home_work.as_deref() != Some(env.path()) {
            self.text.push_str(&env.work.to_string_lossy());
        }
        self.text.push_str(&format!(
            "$ {line}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
            run.code, run.stdout, run.stderr
        ));
        run
    }

    /// Write `token` for `text` (a pid, an id minted on the real clock)
    /// wherever it appears, so the snapshot holds what does not change.
    pub fn redact(&mut self, text: impl Into<String>, token: &str) -> &mut Self {
        self.redactions.push((text.into(), token.to_owned()));
        self
    }

    /// A line saying what happened between two steps.
    pub fn comment(&mut self, text: &str) -> &mut Self {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&format!("# {text}\n"));
        self
    }

    /// The scenario so far, normalized.
    pub fn text(&self) -> String {
        let mut text = self.text.clone();
        for (n, env) in self.envs.iter().enumerate() {
            let token = match n {
                0 => "[ROOT]".to_owned(),
                n => format!("[ROOT{}]", n + 1),
            };
            text = env.normalize_as(&text, &token);
        }
        for (from, to) in &self.redactions {
            text = text.replace(from, to);
        }
        text
    }
}

/// `args` as a shell would read them back: bare where that is safe, else
/// in single quotes, or as a Rust string literal where a character would
/// not show (a control or a bidi one).
pub fn shell_words(args: &[&str]) -> String {
    let word = |a: &&str| -> String {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
        if !a.is_empty() && a.chars().all(plain) {
            (*a).to_owned()
        } else if a
            .chars()
            .any(|c| !matches!(c, '\'' | '"' | '\\') && c.escape_debug().count() > 1)
        {
            format!("{a:?}")
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    args.iter().map(word).collect::<Vec<_>>().join(" ")
}

/// The command line `line` with `input` on its stdin: `printf "a\nb\n" |
/// line`, or `printf %s '{"json":1}' | line` for an input on one line.
pub fn fed(input: &[u8], line: &str) -> String {
    let input = String::from_utf8_lossy(input);
    if input.contains('\n') {
        format!("printf {input:?} | {line}")
    } else {
        format!("printf %s {} | {line}", shell_words(&[&input]))
    }
}

/// Longer than any command of the suites takes on a loaded machine,
/// shorter than a hang.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A child killed and reaped when dropped, so a hung kapi never outlives
/// its test.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run `cmd` with `input` on stdin to its end, or fail the test, killing
/// it, when it is still running after [`DEADLINE`]: for the commands that
/// must not hang on a FIFO or an endless file. stdin is written and both
/// outputs drained on threads, so neither a child that never reads nor a
/// full pipe stalls the test.
pub fn within_deadline(mut cmd: Command, input: &[u8]) -> Run {
    let what = format!(
        "{} {:?}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args().collect::<Vec<_>>()
    );
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let mut stdin = child.0.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let stdout = drain(Box::new(child.0.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.0.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "{what} still running after {DEADLINE:?}: it hangs (killed)"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writer.join();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Make a FIFO at `path`.
#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// True when `path` is a FIFO (not followed if a link).
#[cfg(unix)]
pub fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// `context note --term TERM --instead-of FORM ...extra`.
pub fn term_args<'a>(term: &'a str, instead_of: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "context",
        "note",
        "--term",
        term,
        "--instead-of",
        instead_of,
    ];
    args.extend_from_slice(extra);
    args
}

/// Run `cmd` with `input` on stdin and both outputs captured.
pub fn piped_output(cmd: Command, input: &[u8]) -> Output {
    piped(cmd, input)
}

fn piped(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command refused before it reads its input (a usage error) may
    // exit first: the pipe is then closed, which is not the test's error.
    match child.stdin.take().unwrap().write_all(input) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        written => written.unwrap(),
    }
    child.wait_with_output().unwrap()
}

/// Wait until a process is stopped (state T) at its fault point.
#[cfg(target_os = "linux")]
pub fn wait_stopped(pid: u32) {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        if state == Some("T") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} never stopped: {stat}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
