//! A hermetic test environment: a temporary git repository per test, HOME
//! and git config isolated, the clock and the random seed pinned through the
//! variables the binary honours (KAPI_NOW, KAPI_SEED).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Repo {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
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

pub fn kapi_bin() -> PathBuf {
    PathBuf::from(assert_cmd::cargo::cargo_bin!("kapi"))
}

impl Repo {
    /// A fresh repository with a person's identity configured.
    pub fn new() -> Self {
        let repo = Self::bare_identity();
        repo.git(&["config", "user.email", "ada@example.com"]);
        repo.git(&["config", "user.name", "Ada"]);
        repo
    }

    /// A fresh repository with no identity at all.
    pub fn bare_identity() -> Self {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn isolate(&self, cmd: &mut Command) {
        for var in [
            "KAPI_NOW",
            "KAPI_SEED",
            "KAPI_AGENT",
            "KAPI_SESSION",
            "KAPI_TOOL",
            "CLAUDECODE",
        ] {
            cmd.env_remove(var);
        }
        cmd.current_dir(self.path())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_DATE", "2026-11-30T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-11-30T00:00:00Z");
    }

    /// A kapi command as a person, with the clock and seed pinned.
    pub fn kapi_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kapi_bin());
        self.isolate(&mut cmd);
        cmd.env("KAPI_NOW", "2026-11-30T09:00:00Z")
            .env("KAPI_SEED", "7")
            .args(args);
        cmd
    }

    pub fn kapi(&self, args: &[&str]) -> Run {
        self.kapi_cmd(args).output().unwrap().into()
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
        let mut args = vec![
            "context",
            "note",
            "--term",
            term,
            "--instead-of",
            instead_of,
        ];
        args.extend_from_slice(extra);
        self.agent(session, &args)
    }

    pub fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        self.isolate(&mut cmd);
        let out = cmd.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// git with bytes on stdin.
    pub fn git_stdin(&self, args: &[&str], input: &[u8]) -> String {
        use std::io::Write;
        let mut cmd = Command::new("git");
        self.isolate(&mut cmd);
        let mut child = cmd
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?} failed");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
