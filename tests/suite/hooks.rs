//! The hook suite end to end: `kapi hooks install|status|uninstall` on real
//! repositories (a foreign hook present, `core.hooksPath` set), real `git
//! commit` and `git merge` running the installed shims, and the agent hooks
//! fed the JSON Claude Code and Codex send (fixtures/hooks/).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{Run, TestEnv, Transcript, piped_output, shell_words};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hooks")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn fill(text: &str, pairs: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (k, v) in pairs {
        text = text.replace(&format!("{{{{{k}}}}}"), v);
    }
    text
}

/// A git command that runs the installed hooks (every command of a
/// `TestEnv` runs them with the kapi under test, on the pinned clock).
fn git_hooked(repo: &TestEnv, args: &[&str]) -> Run {
    repo.git_cmd(args).output().unwrap().into()
}

/// [`git_hooked`], recorded.
fn git_step(t: &mut Transcript, repo: &TestEnv, args: &[&str]) -> Run {
    let line = format!("git {}", shell_words(args));
    t.step(repo, &line, git_hooked(repo, args))
}

/// Every file under `dir` with its bytes and mode: what "as it was" means.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            // kapi's own store and git's objects are not what install touches.
            let name = entry.file_name();
            if matches!(
                name.to_str(),
                Some("objects" | "kapi" | "logs" | "refs" | "index")
            ) || name.to_string_lossy().starts_with("ORIG_HEAD")
            {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.push((
                    path.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap_or_default(),
                    meta.permissions().mode(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// An agent session the hooks hear about: its id and transcript.
struct Agent<'a> {
    repo: &'a TestEnv,
    session: String,
    transcript: PathBuf,
    entries: usize,
}

impl<'a> Agent<'a> {
    fn new(repo: &'a TestEnv, session: &str) -> Self {
        let transcript = repo.root().join(format!("{session}.jsonl"));
        std::fs::write(
            &transcript,
            fill(&fixture("transcript.jsonl"), &[("SESSION", session)]),
        )
        .unwrap();
        Agent {
            repo,
            session: session.to_owned(),
            transcript,
            entries: 2,
        }
    }

    /// Claude Code appends an entry (a Stop hook summary, the next turn).
    fn next_entry(&mut self) {
        self.entries += 1;
        let line = format!(
            "{{\"type\":\"system\",\"subtype\":\"stop_hook_summary\",\"uuid\":\"entry-{}\",\"sessionId\":\"{}\"}}\n",
            self.entries, self.session
        );
        let mut text = std::fs::read_to_string(&self.transcript).unwrap();
        text.push_str(&line);
        std::fs::write(&self.transcript, text).unwrap();
    }

    fn input(&self, name: &str, extra: &[(&str, &str)]) -> String {
        let cwd = self.repo.path().display().to_string();
        let transcript = self.transcript.display().to_string();
        let mut pairs = vec![
            ("SESSION", self.session.as_str()),
            ("CWD", cwd.as_str()),
            ("TRANSCRIPT", transcript.as_str()),
        ];
        pairs.extend_from_slice(extra);
        fill(&fixture(name), &pairs)
    }

    fn hook(&self, event: &str, input: &str, env: &[(&str, &str)]) -> Run {
        let mut cmd = self.repo.kapi_cmd(&["hook", event]);
        cmd.env("CLAUDECODE", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        piped_output(cmd, input.as_bytes()).into()
    }

    fn stop(&self, active: bool) -> Run {
        let input = self.input(
            "claude-stop.json",
            &[("STOP_HOOK_ACTIVE", if active { "true" } else { "false" })],
        );
        self.hook("claude-stop", &input, &[])
    }

    /// [`Agent::stop`], recorded.
    fn stop_in(&self, t: &mut Transcript, active: bool) -> Run {
        let line = format!(
            "CLAUDECODE=1 kapi hook claude-stop < claude-stop.json [{} STOP_HOOK_ACTIVE={active}]",
            self.session
        );
        t.step(self.repo, &line, self.stop(active))
    }

    /// `kapi hook EVENT` fed the fixture `name` filled with `extra`,
    /// recorded.
    fn hook_in(&self, t: &mut Transcript, event: &str, name: &str, extra: &[(&str, &str)]) -> Run {
        let mut filled = self.session.clone();
        for (k, v) in extra {
            filled.push_str(&format!(" {k}={v}"));
        }
        let line = format!("CLAUDECODE=1 kapi hook {event} < {name} [{filled}]");
        let run = self.hook(event, &self.input(name, extra), &[]);
        t.step(self.repo, &line, run)
    }

    fn wrote(&self, file: &str, tool_use_id: &str) -> Run {
        let file = self.repo.join(file).display().to_string();
        let input = self.input(
            "claude-post-tool-use-write.json",
            &[("FILE", &file), ("TOOL_USE_ID", tool_use_id)],
        );
        self.hook("claude-post-edit", &input, &[])
    }

    /// [`Agent::wrote`], recorded.
    fn wrote_in(&self, t: &mut Transcript, file: &str, tool_use_id: &str) -> Run {
        let path = self.repo.join(file).display().to_string();
        self.hook_in(
            t,
            "claude-post-edit",
            "claude-post-tool-use-write.json",
            &[("FILE", &path), ("TOOL_USE_ID", tool_use_id)],
        )
    }
}

/// The check runs the log holds for `session`.
fn check_runs(repo: &TestEnv, session: &str) -> Vec<serde_json::Value> {
    repo.kapi(&[
        "context",
        "log",
        "--json",
        "--kind",
        "check",
        "--session",
        session,
    ])
    .ok()
    .json_lines()
}

#[test]
fn the_done_scenario_commit_refused_stop_fixed_once_and_caught_then_uninstalled() {
    let repo = TestEnv::new();
    repo.write("README.md", "# Project\n");
    repo.git(&["add", "README.md"]);
    repo.git(&["commit", "-qm", "start"]);
    let before_git = snapshot(&repo.join(".git"));
    let before_tree = repo.git(&["status", "--porcelain", "--ignored"]);

    let mut t = Transcript::new();
    t.kapi(&repo, &["hooks", "install"]).ok();
    assert!(repo.join(".claude/settings.json").exists());
    repo.kept_rule("Quickcast", "Quick cast");

    // A commit that violates the kept rule is refused.
    repo.write("docs/guide.md", "Open Quick cast from the menu.\n");
    repo.git(&["add", "docs/guide.md"]);
    t.comment("docs/guide.md says \"Open Quick cast from the menu.\"");
    let commit = git_step(&mut t, &repo, &["commit", "-qm", "guide"]);
    assert_ne!(commit.code, 0, "{}", commit.stderr);
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]), "1");
    repo.git(&["reset", "-q"]);

    // The agent's turn ends with the violation: the Stop hook asks it to
    // fix it (exit 2, the findings on stderr).
    let mut agent = Agent::new(&repo, "s-done");
    let stop = agent.stop_in(&mut t, false).code(2);
    assert!(stop.stderr.len() < 10_000);
    // Claude Code runs the hook again for the same Stop: one operation.
    agent.stop(false).code(2);
    assert_eq!(check_runs(&repo, "s-done").len(), 1);

    // The agent fixes it; its next Stop (continuing from the block) is clean.
    agent.next_entry();
    repo.write("docs/guide.md", "Open Quickcast from the menu.\n");
    agent.stop(true).ok();
    let runs = check_runs(&repo, "s-done");
    assert_eq!(runs.len(), 2);

    let session = repo
        .kapi(&["context", "session", "s-done", "--json"])
        .ok()
        .json();
    assert_eq!(session["runs"], 2);
    assert_eq!(session["caught"].as_array().unwrap().len(), 1, "{session}");
    assert_eq!(session["caught"][0]["path"], "docs/guide.md");
    assert_eq!(session["caught"][0]["quote"], "Quick cast");
    assert_eq!(session["review"], "kapi context review --session s-done");
    t.kapi(&repo, &["context", "session", "s-done"]).ok();
    insta::assert_snapshot!(t.text());

    // Check runs never leave the machine.
    let export = repo.kapi(&["store", "export", "-"]).ok().stdout;
    let kinds: Vec<String> = export
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(kinds, [r#""context.observe""#, r#""context.keep""#]);

    // Uninstall leaves the repository as it was.
    std::fs::remove_file(repo.join("docs/guide.md")).unwrap();
    std::fs::remove_dir(repo.join("docs")).unwrap();
    repo.kapi(&["hooks", "uninstall"]).ok();
    assert_eq!(snapshot(&repo.join(".git")), before_git);
    assert_eq!(
        repo.git(&["status", "--porcelain", "--ignored"]),
        before_tree
    );
    assert!(!repo.join(".claude").exists());
}

#[test]
fn a_foreign_hook_is_chained_kept_and_restored_and_reinstalling_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestEnv::new();
    let hook = repo.join(".git/hooks/pre-commit");
    let foreign = "#!/bin/sh\necho foreign pre-commit ran >&2\n";
    std::fs::write(&hook, foreign).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o750)).unwrap();
    let before = snapshot(&repo.join(".git/hooks"));

    // A dry run says what would change and changes nothing.
    let mut t = Transcript::new();
    t.kapi(&repo, &["hooks", "install", "--git", "--dry-run"])
        .ok();
    assert_eq!(snapshot(&repo.join(".git/hooks")), before);

    t.kapi(&repo, &["hooks", "install", "--git"]).ok();
    let installed = snapshot(&repo.join(".git/hooks"));
    assert!(repo.join(".git/hooks/pre-commit.pre-kapi").exists());
    t.kapi(&repo, &["hooks", "status"]).ok();
    t.kapi(&repo, &["hooks", "install", "--git"]).ok();
    assert_eq!(snapshot(&repo.join(".git/hooks")), installed);

    // A commit runs the foreign hook, then kapi's.
    repo.kept_rule("Quickcast", "Quick cast");
    repo.write("a.md", "Quick cast\n");
    repo.git(&["add", "a.md"]);
    t.comment("a.md says \"Quick cast\"");
    git_step(&mut t, &repo, &["commit", "-qm", "a"]).code(1);
    repo.write("a.md", "Quickcast\n");
    repo.git(&["add", "a.md"]);
    t.comment("a.md says \"Quickcast\"");
    git_step(&mut t, &repo, &["commit", "-qm", "a"]).ok();

    // A foreign hook that fails still stops the commit, before kapi checks.
    std::fs::write(
        repo.join(".git/hooks/pre-commit.pre-kapi"),
        "#!/bin/sh\nexit 3\n",
    )
    .unwrap();
    repo.write("b.md", "fine\n");
    repo.git(&["add", "b.md"]);
    t.comment("the foreign hook exits 3");
    let stopped = git_step(&mut t, &repo, &["commit", "-qm", "b"]);
    assert_ne!(stopped.code, 0);
    std::fs::write(repo.join(".git/hooks/pre-commit.pre-kapi"), foreign).unwrap();

    t.kapi(&repo, &["hooks", "uninstall", "--git"]).ok();
    assert_eq!(snapshot(&repo.join(".git/hooks")), before);
    // Uninstalling again finds nothing of kapi's and leaves the foreign hook.
    t.kapi(&repo, &["hooks", "uninstall", "--git"]).ok();
    insta::assert_snapshot!(t.text());
}

#[test]
fn core_hooks_path_is_where_the_hooks_go_and_come_back_from() {
    let repo = TestEnv::new();
    repo.git(&["config", "core.hooksPath", ".githooks"]);
    std::fs::create_dir(repo.join(".githooks")).unwrap();
    repo.write(".githooks/post-merge", "#!/bin/sh\necho team post-merge\n");
    repo.kapi(&["hooks", "install", "--git"]).ok();
    assert!(repo.join(".githooks/pre-commit").exists());
    assert!(repo.join(".githooks/post-merge.pre-kapi").exists());
    assert!(!repo.join(".git/hooks/pre-commit").exists());

    repo.kept_rule("Quickcast", "Quick cast");
    repo.write("a.md", "Quick cast\n");
    repo.git(&["add", "a.md"]);
    assert_eq!(git_hooked(&repo, &["commit", "-qm", "a"]).code, 1);

    repo.kapi(&["hooks", "uninstall", "--git"]).ok();
    assert!(!repo.join(".githooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join(".githooks/post-merge")).unwrap(),
        "#!/bin/sh\necho team post-merge\n"
    );
    assert!(!repo.join(".githooks/post-merge.pre-kapi").exists());
}

#[test]
fn a_linked_worktree_installs_where_git_runs_its_hooks() {
    let repo = TestEnv::new();
    repo.write("a.txt", "a\n");
    repo.git(&["add", "a.txt"]);
    repo.git(&["commit", "-qm", "a"]);
    repo.git(&["worktree", "add", "-q", "../wt", "-b", "side"]);
    let wt = repo.root().join("wt");
    let run: Run = repo
        .kapi_cmd(&["hooks", "install", "--git"])
        .current_dir(&wt)
        .output()
        .unwrap()
        .into();
    let run = run.ok();
    // Hooks are shared by every worktree: the common git dir's.
    assert!(
        repo.join(".git/hooks/pre-commit").exists(),
        "{}",
        run.stdout
    );
}

const NOTE: &str = "---\nid: D-001\ntitle: Cache\nkind: decision\nstatus: accepted\nsensitivity: public\ndate: 2026-01-01\n---\nWe cache things.\n";

#[test]
fn pre_commit_fails_a_stale_artifact_with_the_command_or_regenerates_and_stages_it() {
    let repo = TestEnv::new();
    repo.write("decisions/D-001.md", NOTE);
    repo.write(
        "kapi.toml",
        "[[compile]]\noutput = \"ctx/cache.json\"\nquery = \"cache\"\n\n[[compile]]\noutput = \"ctx/pinned.json\"\nquery = \"cache\"\ntoday = \"2026-11-30\"\n",
    );
    repo.kapi(&["compile-context", "--all"]).ok();
    repo.git(&["add", "-A"]);
    repo.kapi(&["hooks", "install", "--git"]).ok();
    assert_eq!(git_hooked(&repo, &["commit", "-qm", "one"]).code, 0);

    // Midnight passes: the unpinned artifact is stale, the pinned one is not.
    // The stale one is named with the command that compiles it.
    let mut cmd = repo.git_cmd(&["commit", "-qm", "two", "--allow-empty"]);
    cmd.env("KAPI_NOW", "2026-12-01T09:00:00Z");
    let mut t = Transcript::new();
    let line = "KAPI_NOW=2026-12-01T09:00:00Z git commit -qm two --allow-empty";
    t.step(&repo, line, cmd.output().unwrap().into()).code(1);

    // The vault changes: with compile = "regenerate" the hook recompiles
    // the stale artifacts and stages them into the commit.
    repo.write(
        "decisions/D-001.md",
        &NOTE.replace("We cache things.", "We cache everything."),
    );
    repo.write(
        "kapi.toml",
        &format!(
            "[hooks]\ncompile = \"regenerate\"\n\n{}",
            std::fs::read_to_string(repo.join("kapi.toml")).unwrap()
        ),
    );
    repo.git(&["add", "-A"]);
    t.comment("D-001 changed; kapi.toml: [hooks] compile = \"regenerate\"");
    git_step(&mut t, &repo, &["commit", "-qm", "three"]).ok();
    insta::assert_snapshot!(t.text());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let changed = repo.git(&["diff", "--name-only", "HEAD~1", "HEAD"]);
    assert_eq!(
        changed.lines().collect::<Vec<_>>(),
        [
            "ctx/cache.json",
            "ctx/pinned.json",
            "decisions/D-001.md",
            "kapi.toml"
        ]
    );
}

#[test]
fn post_merge_regenerates_what_the_merge_made_stale_and_never_fails_the_merge() {
    let repo = TestEnv::new();
    repo.write("decisions/D-001.md", NOTE);
    repo.write(
        "kapi.toml",
        "[[compile]]\noutput = \"ctx/cache.json\"\nquery = \"cache\"\n",
    );
    repo.kapi(&["compile-context", "--all"]).ok();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "base"]);
    repo.git(&["checkout", "-qb", "side"]);
    repo.write(
        "decisions/D-001.md",
        &NOTE.replace("We cache things.", "We cache more."),
    );
    repo.git(&["commit", "-qam", "side"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.kapi(&["hooks", "install", "--git"]).ok();

    let mut t = Transcript::new();
    git_step(&mut t, &repo, &["merge", "-q", "--no-edit", "side"]).ok();
    let verified = repo.kapi(&["verify-context", "--all"]).ok().json();
    assert_eq!(verified["status"], "current", "{verified}");

    // A broken kapi.toml: the hook reports and the merge still succeeds.
    repo.git(&["commit", "-qam", "regenerated"]);
    repo.git(&["checkout", "-qb", "other"]);
    repo.write("x.txt", "x\n");
    repo.git(&["add", "x.txt"]);
    repo.git(&["commit", "-qm", "x"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.write("kapi.toml", "[[compile]\nbroken");
    t.comment("kapi.toml broken");
    git_step(&mut t, &repo, &["merge", "-q", "--no-edit", "other"]).ok();
    insta::assert_snapshot!(t.text());
    assert!(repo.join("x.txt").exists());

    // The hook itself exits 0 whatever happens.
    let direct = repo.kapi(&["hook", "post-merge", "0"]);
    assert_eq!(direct.code, 0, "{}", direct.stderr);
}

#[test]
fn session_start_attributes_the_session_and_hands_the_rules_in_force_to_the_agent() {
    let repo = TestEnv::new();
    repo.kept_rule("Quickcast", "Quick cast");
    let agent = Agent::new(&repo, "s-start");
    let env_file = repo.root().join("claude-env");
    let env = env_file.display().to_string();
    let run = agent
        .hook(
            "claude-session-start",
            &agent.input("claude-session-start.json", &[]),
            &[("CLAUDE_ENV_FILE", &env)],
        )
        .ok();
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        "export KAPI_SESSION='s-start'\n"
    );
    let answer = run.json();
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.len() <= 8_000);
    // What the agent is handed: the kept rule.
    insta::assert_snapshot!(context);

    // Sourcing the file attributes the session's kapi commands to it, so
    // `--session this` works and the agent can withdraw its own suggestion.
    let sourced = std::fs::read_to_string(&env_file).unwrap();
    let session = sourced
        .trim()
        .trim_start_matches("export KAPI_SESSION='")
        .trim_end_matches('\'');
    repo.agent_term(session, "Autosave", "Auto save", &["--quote", "Auto save"])
        .ok();
    let mine = repo
        .agent(session, &["context", "log", "--session", "this", "--json"])
        .ok()
        .json_lines();
    assert_eq!(mine.len(), 1);

    // Never fails the session start: bad input, no env file, no repository.
    let bad = agent.hook("claude-session-start", "not json", &[]);
    assert_eq!(bad.code, 0, "{}", bad.stderr);
    let plain = TestEnv::new();
    let run = agent.hook(
        "claude-session-start",
        &agent.input("claude-session-start.json", &[]).replace(
            &repo.path().display().to_string(),
            &plain.root().join("nowhere").display().to_string(),
        ),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn post_edit_checks_the_file_written_once_per_tool_call() {
    let repo = TestEnv::new();
    repo.kept_rule("Quickcast", "Quick cast");
    let agent = Agent::new(&repo, "s-edit");
    repo.write("docs/a.md", "Quick cast is fast.\n");
    let mut t = Transcript::new();
    agent.wrote_in(&mut t, "docs/a.md", "toolu_01").code(2);
    insta::assert_snapshot!(t.text());
    agent.wrote("docs/a.md", "toolu_01").code(2);
    assert_eq!(check_runs(&repo, "s-edit").len(), 1);

    repo.write("docs/a.md", "Quickcast is fast.\n");
    agent.wrote("docs/a.md", "toolu_02").ok();
    let runs = check_runs(&repo, "s-edit");
    assert_eq!(runs.len(), 2);

    // A file that is not prose is neither checked nor recorded.
    repo.write("src/main.rs", "// Quick cast\n");
    agent.wrote("src/main.rs", "toolu_03").ok();
    assert_eq!(check_runs(&repo, "s-edit").len(), 2);

    // MultiEdit reads the same way.
    let file = repo.join("docs/a.md").display().to_string();
    repo.write("docs/a.md", "Quick cast again.\n");
    let input = agent.input(
        "claude-post-tool-use-multiedit.json",
        &[("FILE", &file), ("TOOL_USE_ID", "toolu_04")],
    );
    agent.hook("claude-post-edit", &input, &[]).code(2);

    let session = repo
        .kapi(&["context", "session", "s-edit", "--json"])
        .ok()
        .json();
    assert_eq!(session["caught"].as_array().unwrap().len(), 1, "{session}");
    assert_eq!(session["open"].as_array().unwrap().len(), 1, "{session}");
}

#[test]
fn codex_stop_answers_with_a_json_decision() {
    let repo = TestEnv::new();
    repo.kept_rule("Quickcast", "Quick cast");
    repo.write("notes.md", "Quick cast\n");
    let agent = Agent::new(&repo, "s-codex");
    let input = agent.input(
        "codex-stop.json",
        &[("STOP_HOOK_ACTIVE", "false"), ("TOOL_USE_ID", "turn-1")],
    );
    let mut cmd = repo.kapi_cmd(&["hook", "codex-stop"]);
    cmd.env("KAPI_AGENT", "codex");
    let run = Run::from(piped_output(cmd, input.as_bytes())).ok();
    let answer = run.json();
    assert_eq!(answer["decision"], "block");
    // The reason names notes.md.
    insta::assert_snapshot!(answer["reason"].as_str().unwrap());
    let runs = check_runs(&repo, "s-codex");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["actor"]["name"], "codex");

    // Installing for Codex writes its hooks.json; uninstall removes it.
    repo.kapi(&["hooks", "install", "--codex"]).ok();
    let hooks = std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap();
    let hooks: serde_json::Value = serde_json::from_str(&hooks).unwrap();
    assert_eq!(
        hooks["hooks"]["Stop"][0]["hooks"][0]["command"], "kapi hook codex-stop",
        "{hooks}"
    );
    repo.kapi(&["hooks", "uninstall", "--codex"]).ok();
    assert!(!repo.join(".codex").exists());
}

/// kapi's table in `.codex/config.toml`, as install writes it.
const CODEX_KAPI: &str = "[mcp_servers.kapi]\ncommand = \"kapi\"\nargs = [\"mcp\"]\n";

#[test]
fn codex_gets_kapi_mcp_in_its_config_and_loses_exactly_it() {
    let repo = TestEnv::new();
    let config = repo.join(".codex/config.toml");
    let read = || std::fs::read(&config).unwrap();
    let mut t = Transcript::new();
    t.kapi(&repo, &["hooks", "install", "--codex", "--dry-run"])
        .ok();
    assert!(!repo.join(".codex").exists(), "a dry run writes nothing");

    // A new config holds kapi's table only; installing again changes nothing.
    t.kapi(&repo, &["hooks", "install", "--codex"]).ok();
    assert_eq!(read(), CODEX_KAPI.as_bytes());
    t.kapi(&repo, &["hooks", "install", "--codex"]).ok();
    assert_eq!(read(), CODEX_KAPI.as_bytes());
    t.kapi(&repo, &["hooks", "status"]).ok();
    t.kapi(&repo, &["hooks", "uninstall", "--codex"]).ok();
    assert!(!repo.join(".codex").exists());

    // The project's own config: comments, other servers with their keys
    // in their order, tables after them, no blank line at the end.
    let theirs = "# Codex for this project\nmodel = \"o3\"  # fast enough\n\n[mcp_servers.docs]\nargs = [\"-y\", \"docs-mcp\"]   # pinned below\ncommand = \"npx\"\nstartup_timeout_sec = 20\n\n[mcp_servers.docs.env]\nDOCS_TOKEN = \"x\"\n\n[profiles.quick]\nmodel = 'o4-mini'\n# end";
    repo.write(".codex/config.toml", theirs);
    t.comment(".codex/config.toml holds the project's settings and a docs server");
    t.kapi(&repo, &["hooks", "install", "--codex"]).ok();
    assert_eq!(read(), format!("{theirs}\n{CODEX_KAPI}").as_bytes());
    let installed = read();
    t.kapi(&repo, &["hooks", "uninstall", "--codex", "--dry-run"])
        .ok();
    assert_eq!(read(), installed);
    t.kapi(&repo, &["hooks", "uninstall", "--codex"]).ok();
    assert_eq!(read(), theirs.as_bytes(), "every byte as it was");
    assert!(!repo.join(".codex/hooks.json").exists());
    insta::assert_snapshot!(t.text());
}

#[test]
fn a_codex_config_kapi_cannot_edit_or_whose_kapi_server_is_not_kapis_is_left_as_it_was() {
    let repo = TestEnv::new();
    let config = ".codex/config.toml";
    let read = || std::fs::read_to_string(repo.join(config)).unwrap();
    let mut t = Transcript::new();

    let theirs = "[mcp_servers.kapi]\ncommand = \"/opt/kapi/bin/kapi\"\nargs = [\"mcp\"]\n";
    repo.write(config, theirs);
    t.comment("a server named kapi that is not kapi's");
    t.kapi(&repo, &["hooks", "install", "--codex"]).ok();
    t.kapi(&repo, &["hooks", "status"]).ok();
    t.kapi(&repo, &["hooks", "uninstall", "--codex"]).ok();
    assert_eq!(read(), theirs);

    // Not TOML: refused, naming the file and where; nothing is written,
    // hooks.json included.
    let broken = "model = \"o3\"\n[mcp_servers.docs\ncommand = \"npx\"\n";
    repo.write(config, broken);
    t.comment(".codex/config.toml is not TOML");
    let run = t.kapi(&repo, &["hooks", "install", "--codex"]).code(2);
    assert!(run.stderr.contains("line 2, column 18"), "{}", run.stderr);
    t.kapi(&repo, &["hooks", "uninstall", "--codex"]).code(2);
    assert_eq!(read(), broken);
    assert!(!repo.join(".codex/hooks.json").exists());

    let odd = "mcp_servers = \"npx docs-mcp\"\n";
    repo.write(config, odd);
    t.comment("mcp_servers is not a table");
    t.kapi(&repo, &["hooks", "install", "--codex"]).code(2);
    assert_eq!(read(), odd);
    assert!(!repo.join(".codex/hooks.json").exists());
    insta::assert_snapshot!(t.text());
}

#[test]
fn an_agent_hook_that_cannot_work_never_blocks_the_agent() {
    let repo = TestEnv::new();
    let agent = Agent::new(&repo, "s-bad");
    // 1, not 2: a hook error the agent is not asked to fix.
    let mut t = Transcript::new();
    let input = "{\"no\": \"session\"}";
    let line = crate::common::fed(input.as_bytes(), "CLAUDECODE=1 kapi hook claude-stop");
    t.step(&repo, &line, agent.hook("claude-stop", input, &[]))
        .code(1);
    repo.write("kapi.toml", "not toml [");
    t.comment("kapi.toml is not TOML");
    agent.stop_in(&mut t, false).code(1);
    insta::assert_snapshot!(t.text());
}

#[test]
fn claude_settings_of_the_project_keep_their_own_hooks_and_order() {
    let repo = TestEnv::new();
    let settings = "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(npm test)\"\n    ]\n  },\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./notify.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    repo.write(".claude/settings.json", settings);
    let mode = |repo: &TestEnv| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(repo.join(".claude/settings.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            repo.join(".claude/settings.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    repo.kapi(&["hooks", "install", "--claude"]).ok();
    assert_eq!(mode(&repo), 0o600);
    let installed = std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap();
    assert!(installed.starts_with("{\n  \"permissions\""), "{installed}");
    // The project's Stop hook first, kapi's after it.
    let parsed: serde_json::Value = serde_json::from_str(&installed).unwrap();
    let stop: Vec<&str> = parsed["hooks"]["Stop"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|group| group["hooks"].as_array().unwrap())
        .map(|hook| hook["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        stop,
        ["./notify.sh", "kapi hook claude-stop"],
        "{installed}"
    );
    repo.kapi(&["hooks", "install", "--claude"]).ok();
    assert_eq!(
        std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap(),
        installed
    );
    repo.kapi(&["hooks", "uninstall", "--claude"]).ok();
    assert_eq!(
        std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap(),
        settings
    );
    assert_eq!(mode(&repo), 0o600);

    // --claude-md creates CLAUDE.md importing AGENTS.md, which the rules
    // refresh then keeps (it exists now).
    repo.kapi(&["hooks", "install", "--claude", "--claude-md"])
        .ok();
    assert_eq!(
        std::fs::read_to_string(repo.join("CLAUDE.md")).unwrap(),
        "@AGENTS.md\n"
    );
    repo.kept_rule("Quickcast", "Quick cast");
    let claude = std::fs::read_to_string(repo.join("CLAUDE.md")).unwrap();
    assert!(claude.starts_with("@AGENTS.md\n"), "{claude}");
    // The rules refresh writes the kept rule after the import.
    insta::assert_snapshot!(claude);
    assert!(!repo.join("AGENTS.md").exists());
}

#[test]
fn stop_checks_what_the_session_changed_since_it_started_even_when_committed() {
    let repo = TestEnv::new();
    repo.write("README.md", "# Project\n");
    repo.git(&["add", "README.md"]);
    repo.git(&["commit", "-qm", "start"]);
    repo.kept_rule("Quickcast", "Quick cast");
    // An untracked draft that was there before the session began.
    repo.write("notes/old.md", "Quick cast draft\n");
    let agent = Agent::new(&repo, "s-base");
    agent
        .hook(
            "claude-session-start",
            &agent.input("claude-session-start.json", &[]),
            &[],
        )
        .ok();
    // The agent commits a violation (hooks not installed): HEAD moved, yet
    // the file changed since the session began.
    repo.write("docs/a.md", "Quick cast\n");
    repo.git(&["add", "docs/a.md"]);
    repo.git(&["commit", "-qm", "agent"]);
    // docs/a.md, not the old draft.
    let mut t = Transcript::new();
    agent.stop_in(&mut t, false).code(2);
    // Another session that began after that commit has nothing to fix.
    let later = Agent::new(&repo, "s-later");
    later
        .hook(
            "claude-session-start",
            &later.input("claude-session-start.json", &[]),
            &[],
        )
        .ok();
    later.stop(false).ok();
    // Until it touches the old draft.
    repo.write("notes/old.md", "Quick cast draft, edited\n");
    let mut later = later;
    later.next_entry();
    t.comment("s-later edits notes/old.md");
    later.stop_in(&mut t, false).code(2);
    insta::assert_snapshot!(t.text());
}

#[test]
fn post_merge_records_the_merge_signals_of_the_range_and_settles_without_pushing() {
    let repo = TestEnv::new();
    repo.write("docs/a.md", "Open Quick cast.\n");
    repo.git(&["add", "docs/a.md"]);
    repo.git(&["commit", "-qm", "base"]);
    repo.agent_term("s1", "Quickcast", "Quick cast", &["--quote", "Quick cast"])
        .ok();
    repo.git(&["checkout", "-qb", "fix"]);
    repo.write("docs/a.md", "Open Quickcast.\n");
    repo.git(&["commit", "-qam", "Write Quickcast (#7)"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.kapi(&["hooks", "install", "--git"]).ok();

    let mut t = Transcript::new();
    git_step(&mut t, &repo, &["merge", "-q", "fix"]).ok();
    let signals = repo
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok()
        .json_lines();
    assert_eq!(signals.len(), 1, "{signals:?}");
    // Running the hook again for the same merge records nothing more.
    repo.kapi(&["hook", "post-merge", "0"]).ok();
    let again = repo
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok()
        .json_lines();
    assert_eq!(again.len(), 1);

    // A merge into a branch that is not the default one records no signal.
    repo.git(&["checkout", "-qb", "feature"]);
    repo.git(&["checkout", "-qb", "side"]);
    repo.write("docs/c.md", "Quickcast on the side.\n");
    repo.git(&["add", "docs/c.md"]);
    repo.git(&["commit", "-qm", "c (#8)"]);
    repo.git(&["checkout", "-q", "feature"]);
    t.comment("on the branch feature");
    git_step(
        &mut t,
        &repo,
        &["merge", "-q", "--no-ff", "side", "-m", "Merge side"],
    )
    .ok();
    repo.git(&["checkout", "-q", "main"]);
    let after = repo
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok()
        .json_lines();
    assert_eq!(after.len(), 1, "{after:?}");

    // An agent's merge records no signal.
    repo.git(&["checkout", "-qb", "agent"]);
    repo.write("docs/b.md", "Quickcast too.\n");
    repo.git(&["add", "docs/b.md"]);
    repo.git(&["commit", "-qm", "b"]);
    repo.git(&["checkout", "-q", "main"]);
    let mut cmd = repo.git_cmd(&["merge", "-q", "agent"]);
    cmd.env("CLAUDECODE", "1");
    t.comment("on main");
    t.step(
        &repo,
        "CLAUDECODE=1 git merge -q agent",
        cmd.output().unwrap().into(),
    )
    .ok();
    insta::assert_snapshot!(t.text());
}

/// The post-merge hook reads the range over the reader's view: a merge
/// that gives no suggestion a signal, with nothing due to settle, records
/// nothing and never reads the whole ledger (a second at a million
/// operations, after every pull); one that gives a signal records it and
/// settles, as before.
#[test]
fn post_merge_reads_the_whole_ledger_only_when_it_has_something_to_record() {
    let repo = TestEnv::new();
    repo.write("docs/a.md", "Open Quick cast.\n");
    repo.git(&["add", "docs/a.md"]);
    repo.git(&["commit", "-qm", "base"]);
    let id = repo.agent_rule_at("s1", "Quickcast", "Quick cast", "docs/a.md");
    repo.kapi(&["check", "docs/a.md"]).ok();
    repo.kapi(&["hooks", "install", "--git"]).ok();
    let base = repo.join(".git/kapi/fold.base");
    assert!(base.exists(), "a read leaves the whole ledger's checkpoint");
    std::fs::remove_file(&base).unwrap();

    repo.git(&["checkout", "-qb", "unrelated"]);
    repo.write("src/main.c", "int main(void) { return 0; }\n");
    repo.git(&["add", "src/main.c"]);
    repo.git(&["commit", "-qm", "code only"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&[
        "merge",
        "-q",
        "--no-ff",
        "unrelated",
        "-m",
        "Merge unrelated",
    ]);
    let quiet = repo.kapi(&["hook", "post-merge", "0"]).ok();
    assert!(
        !base.exists(),
        "the hook read the whole ledger: {}",
        quiet.stderr
    );
    let status = |repo: &TestEnv| -> String {
        let listed = repo.kapi(&["context", "log", "--json"]).ok().json_lines();
        listed.iter().find(|l| l["id"] == id.as_str()).unwrap()["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(status(&repo), "suggested");
    std::fs::remove_file(&base).unwrap();

    repo.git(&["checkout", "-qb", "fix"]);
    repo.write("docs/a.md", "Open Quickcast.\n");
    repo.git(&["commit", "-qam", "Write Quickcast (#7)"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["merge", "-q", "fix"]);
    let signals = repo
        .kapi(&["context", "log", "--kind", "signal", "--json"])
        .ok()
        .json_lines();
    assert_eq!(signals.len(), 1, "{signals:?}");
    assert_eq!(signals[0]["target"], id.as_str(), "{signals:?}");
    assert_eq!(status(&repo), "established");
}

#[test]
fn pre_commit_names_each_artifact_it_cannot_pass_and_refuses() {
    let repo = TestEnv::new();
    repo.write(
        "kapi.toml",
        "[[compile]]\noutput = \"ctx/a.json\"\nquery = \"x\"\nroot = \"no-vault\"\n\n[[compile]]\noutput = \"ctx/b.json\"\nranking = \"nope\"\n",
    );
    repo.write("a.txt", "a\n");
    repo.git(&["add", "-A"]);
    // ctx/a.json is stale (artifact_missing); ctx/b.json has an unknown
    // ranking.
    let mut t = Transcript::new();
    t.kapi(&repo, &["hook", "pre-commit"]).code(1);
    insta::assert_snapshot!(t.text());
}

/// The human output of the hooks, pinned: install beside a foreign hook,
/// status, a refused commit's hook, a Stop's reason, a session's outcomes.
#[test]
fn hook_messages() {
    let repo = TestEnv::new();
    repo.write(".git/hooks/post-merge", "#!/bin/sh\necho mine\n");
    let snap = |name: &str, run: &Run| insta::assert_snapshot!(name, repo.transcript(run));
    snap("hooks_install", &repo.kapi(&["hooks", "install"]));
    snap("hooks_status", &repo.kapi(&["hooks", "status"]));
    repo.kept_rule("Quickcast", "Quick cast");
    repo.write(
        "docs/guide.md",
        "# Guide\n\nOpen Quick cast from the menu.\n",
    );
    repo.git(&["add", "docs/guide.md"]);
    snap(
        "hook_pre_commit_refused",
        &repo.kapi(&["hook", "pre-commit"]),
    );
    let mut agent = Agent::new(&repo, "s-snap");
    snap("hook_claude_stop_blocks", &agent.stop(false));
    agent.next_entry();
    repo.write(
        "docs/guide.md",
        "# Guide\n\nOpen Quickcast from the menu.\n",
    );
    agent.stop(true).ok();
    repo.agent_term("s-snap", "Autosave", "Auto save", &["--quote", "Auto save"])
        .ok();
    snap(
        "context_session",
        &repo.kapi(&["context", "session", "s-snap"]),
    );
    snap("hooks_uninstall", &repo.kapi(&["hooks", "uninstall"]));
}

#[test]
fn an_older_shim_is_updated_and_two_foreign_hooks_are_never_guessed_between() {
    let repo = TestEnv::new();
    repo.kapi(&["hooks", "install", "--git"]).ok();
    let hook = repo.join(".git/hooks/pre-commit");
    let shim = std::fs::read_to_string(&hook).unwrap();
    std::fs::write(&hook, shim.replace("exec ", "exec  ")).unwrap();
    let mut t = Transcript::new();
    t.comment("the pre-commit shim differs from this kapi's");
    t.kapi(&repo, &["hooks", "status"]).ok();
    t.kapi(&repo, &["hooks", "install", "--git"]).ok();
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), shim);
    repo.kapi(&["hooks", "uninstall", "--git"]).ok();

    // post-merge is crowded: nothing is installed, pre-commit included.
    let merge = repo.join(".git/hooks/post-merge");
    std::fs::write(&merge, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::write(
        repo.join(".git/hooks/post-merge.pre-kapi"),
        "#!/bin/sh\nexit 0\n",
    )
    .unwrap();
    t.comment("post-merge and post-merge.pre-kapi are both foreign");
    t.kapi(&repo, &["hooks", "install", "--git"]).code(2);
    insta::assert_snapshot!(t.text());
    assert_eq!(
        std::fs::read_to_string(&merge).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    assert!(!hook.exists());
}

/// A `kapi context note` stopped (SIGSTOP) while it holds the commit lock,
/// just after moving the ref: later writers leave their lines in the
/// journal. Killed and reaped when dropped, so a failing test leaves no
/// stopped process holding the lock.
#[cfg(target_os = "linux")]
struct StoppedCommitter(std::process::Child);

#[cfg(target_os = "linux")]
impl Drop for StoppedCommitter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(target_os = "linux")]
fn stopped_committer(repo: &TestEnv) -> StoppedCommitter {
    let child = repo
        .kapi_cmd(&["context", "note", "holds the commit lock"])
        .env("KAPI_FAULT", "ref-moved:stop")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // In its guard first: a process that never stops is killed and reaped.
    let committer = StoppedCommitter(child);
    crate::common::wait_stopped(committer.0.id());
    committer
}

#[cfg(target_os = "linux")]
#[test]
fn a_tool_call_delivered_twice_is_recorded_once_while_its_run_waits_in_the_journal() {
    let repo = TestEnv::new();
    repo.kept_rule("Quickcast", "Quick cast");
    let agent = Agent::new(&repo, "s-journal");
    let victim = stopped_committer(&repo);
    repo.write("docs/a.md", "Quick cast is fast.\n");
    let file = repo.join("docs/a.md").display().to_string();
    let input = agent.input(
        "claude-post-tool-use-write.json",
        &[("FILE", &file), ("TOOL_USE_ID", "toolu_01")],
    );
    let runs = || {
        std::fs::read_to_string(repo.join(".git/kapi/journal"))
            .unwrap_or_default()
            .matches("\"kind\":\"context.check\"")
            .count()
    };
    // The committer holds the lock: the run stays in the journal.
    agent.hook(
        "claude-post-edit",
        &input,
        &[("KAPI_LOCK_TIMEOUT_MS", "300")],
    );
    assert_eq!(runs(), 1, "the run waits in the journal");
    // The same tool call delivered again finds its run there.
    agent.hook(
        "claude-post-edit",
        &input,
        &[("KAPI_LOCK_TIMEOUT_MS", "300")],
    );
    assert_eq!(runs(), 1, "the same run is not journaled twice");
    drop(victim);
    assert_eq!(check_runs(&repo, "s-journal").len(), 1);
}

/// Claude Code's PreToolUse input for a Bash call.
fn pre_bash_input(repo: &TestEnv, command: &str) -> String {
    serde_json::json!({
        "session_id": "s-door",
        "transcript_path": repo.root().join("s-door.jsonl"),
        "cwd": repo.path(),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": { "command": command, "description": "run it" },
        "tool_use_id": "toolu_door",
    })
    .to_string()
}

fn pre_bash(repo: &TestEnv, input: &str) -> Run {
    let mut cmd = repo.kapi_cmd(&["hook", "claude-pre-bash"]);
    cmd.env("CLAUDECODE", "1");
    piped_output(cmd, input.as_bytes()).into()
}

#[test]
fn the_shell_door_refuses_what_only_a_person_runs_and_fails_closed() {
    let repo = TestEnv::new();
    let refused = |command: &str, stderr: &str| {
        let run = pre_bash(&repo, &pre_bash_input(&repo, command)).code(2);
        assert_eq!(run.stderr, stderr, "{command}");
        assert_eq!(run.stdout, "", "{command}");
    };
    let ask = "An agent may not run this: if it is needed, ask the user to run it.\n";
    refused(
        "cargo test && kapi context review --session s-door --keep all",
        &format!(
            "kapi: refused `kapi context review --session s-door --keep all`: \
             `kapi context review` decides on suggestions, a person's act.\n{ask}"
        ),
    );
    refused(
        "sh -c 'kapi context reset --before s-door'",
        &format!(
            "kapi: refused `sh -c 'kapi context reset --before s-door'`: \
             `kapi context reset` sets the ledger back, a person's act.\n{ask}"
        ),
    );
    refused(
        "git kapi context sync",
        &format!(
            "kapi: refused `git kapi context sync`: `kapi context sync` pushes the ledger, \
             or merges what only a person vouches for, a person's act.\n{ask}"
        ),
    );
    refused(
        "CLAUDECODE= kapi context note --term Quickcast --avoid 'Quick cast'",
        &format!(
            "kapi: refused `'CLAUDECODE=' kapi context note --term Quickcast --avoid 'Quick cast'`: \
             it sets or unsets CLAUDECODE, which tells kapi who is calling.\n{ask}"
        ),
    );
    refused(
        "env -u KAPI_SESSION kapi context log",
        &format!(
            "kapi: refused `env -u KAPI_SESSION kapi context log`: \
             it sets or unsets KAPI_SESSION, which tells kapi who is calling.\n{ask}"
        ),
    );
    refused(
        "git update-ref -d refs/kapi/ops",
        &format!(
            "kapi: refused `git update-ref -d refs/kapi/ops`: \
             it writes refs/kapi/, kapi's ledger, which only kapi itself writes.\n{ask}"
        ),
    );
    refused(
        "echo '{}' >> .git/kapi/journal",
        &format!(
            "kapi: refused `echo '{{}}' >> .git/kapi/journal`: \
             it writes .git/kapi, kapi's ledger, which only kapi itself writes.\n{ask}"
        ),
    );

    // What an agent may run passes silently, and runs for real.
    for command in [
        "cargo test",
        "kapi context review --session s-door",
        "kapi context reset --before s-door --dry-run",
        "kapi context sync --no-push",
        "git log refs/kapi/ops",
        "echo 'kapi context reset --before s-door'",
    ] {
        let run = pre_bash(&repo, &pre_bash_input(&repo, command)).ok();
        assert_eq!(
            (run.stdout.as_str(), run.stderr.as_str()),
            ("", ""),
            "{command}"
        );
    }

    // A command that is not shell words is let through, and said so.
    let run = pre_bash(
        &repo,
        &pre_bash_input(&repo, "kapi context reset --before 's-door"),
    )
    .ok();
    assert_eq!(
        run.stderr,
        "kapi: the Bash command is not shell words kapi can read \
         (an unbalanced single quote); let through unchecked\n"
    );

    // Another tool's call is not the guard's.
    let read = pre_bash_input(&repo, "x").replace("\"Bash\"", "\"Read\"");
    pre_bash(&repo, &read).ok();

    // Input the guard cannot read is a refusal: Claude Code would let any
    // other failure through.
    for (input, why) in [
        ("not json".to_owned(), "expected ident at line 1 column 2"),
        (
            pre_bash_input(&repo, "ls").replace("\"command\":\"ls\"", "\"command\":7"),
            "`tool_input.command` is not a string",
        ),
        (
            pre_bash_input(&repo, "ls").replace("s-door", ""),
            "`session_id` is empty or longer than 256 bytes",
        ),
    ] {
        let run = pre_bash(&repo, &input).code(2);
        assert_eq!(
            run.stderr,
            format!(
                "kapi: the Bash guard refuses the command: the hook input is not valid: {why}\n"
            )
        );
    }
    // Past the input cap: cut, so not valid JSON, so refused.
    // (kapi stops reading at the cap, so the rest may not be written.)
    let huge = pre_bash_input(&repo, &"x".repeat(5 * 1024 * 1024));
    let mut child = repo
        .kapi_cmd(&["hook", "claude-pre-bash"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(huge.as_bytes());
    }
    let run: Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, 2, "{}", run.stderr);
    // Outside any repository, and from a directory that is gone.
    let gone = tempfile::tempdir().unwrap();
    let kapi = repo.kapi_cmd(&[]).get_program().to_owned();
    let mut cmd = std::process::Command::new("sh");
    cmd.args([
        "-c",
        "cd \"$1\" && rmdir \"$1\" && exec \"$0\" hook claude-pre-bash",
    ])
    .arg(kapi)
    .arg(gone.path().join("d"));
    std::fs::create_dir(gone.path().join("d")).unwrap();
    let run: Run =
        piped_output(cmd, pre_bash_input(&repo, "kapi store import x").as_bytes()).into();
    assert!(!gone.path().join("d").exists());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("kapi: refused `kapi store import x`"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_shell_door_is_installed_beside_the_project_s_own_pre_tool_use_hooks() {
    let repo = TestEnv::new();
    let settings = "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./lint-bash.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    repo.write(".claude/settings.json", settings);
    repo.kapi(&["hooks", "install", "--claude"]).ok();
    let installed = std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&installed).unwrap();
    let groups = parsed["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{installed}");
    assert_eq!(groups[0]["hooks"][0]["command"], "./lint-bash.sh");
    assert_eq!(
        groups[1],
        serde_json::json!({
            "matcher": "Bash",
            "hooks": [{ "type": "command", "command": "kapi hook claude-pre-bash", "timeout": 10 }]
        })
    );
    repo.kapi(&["hooks", "install", "--claude"]).ok();
    assert_eq!(
        std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap(),
        installed
    );
    repo.kapi(&["hooks", "uninstall", "--claude"]).ok();
    assert_eq!(
        std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap(),
        settings
    );
}

/// git by its absolute path, so a commit can run with `PATH` emptied.
fn git_path() -> std::path::PathBuf {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `git commit -m MESSAGE ...extra` with `PATH` emptied, as a GUI client
/// runs hooks: (exit code, stderr).
fn commit_without_path(repo: &TestEnv, message: &str, extra: &[&str]) -> (i32, String) {
    let mut cmd = std::process::Command::new(git_path());
    repo.isolate(&mut cmd);
    let out = cmd
        .args(["commit", "-qm", message])
        .args(extra)
        .env("PATH", "")
        .env_remove("KAPI")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_pre_commit_hook_runs_the_kapi_that_installed_it_and_fails_closed_without_one() {
    let repo = TestEnv::new();
    repo.write("README.md", "A project.\n");
    repo.git(&["add", "README.md"]);
    repo.git(&["commit", "-qm", "first"]);
    repo.kept_rule("Quickcast", "Quick cast");
    repo.kapi(&["hooks", "install", "--git"]).ok();
    let hook = repo.join(".git/hooks/pre-commit");
    let shim = std::fs::read_to_string(&hook).unwrap();
    let kapi = crate::common::kapi_bin().canonicalize().unwrap();
    let named = format!("installed='{}'\n", kapi.display());
    assert!(shim.contains(&named), "{shim}");

    // PATH holds no kapi: the hook runs the one that installed it, whose
    // check refuses the violating commit.
    repo.write("docs/a.md", "Quick cast streams video.\n");
    repo.git(&["add", "docs/a.md"]);
    let (code, stderr) = commit_without_path(&repo, "violating", &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        repo.git(&["rev-list", "--count", "HEAD"]),
        "1",
        "nothing committed"
    );

    // Neither that kapi nor one on PATH: the commit is refused, saying how
    // to install kapi or bypass on purpose.
    std::fs::write(&hook, shim.replace(&named, "installed='/nowhere/kapi'\n")).unwrap();
    repo.write("docs/a.md", "Quickcast streams video.\n");
    repo.git(&["add", "docs/a.md"]);
    let (code, stderr) = commit_without_path(&repo, "clean", &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        "kapi: the pre-commit hook refuses the commit: no kapi to run (not /nowhere/kapi, nor `kapi` on PATH), so the project's rules would go unchecked.\n\
         kapi: install kapi (see its README), or commit without the hook on purpose: git commit --no-verify\n"
    );
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]), "1");
    let (code, stderr) = commit_without_path(&repo, "on purpose", &["--no-verify"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]), "2");

    // `hooks status` knows the shim wherever its kapi was; install writes
    // it again for this kapi.
    let status = repo.kapi(&["hooks", "status"]).ok();
    assert_eq!(
        status.stdout.lines().next().unwrap_or_default(),
        "git    pre-commit   .git/hooks/pre-commit: installed",
        "{}",
        status.stdout
    );
    repo.kapi(&["hooks", "install", "--git"]).ok();
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), shim);
}

#[test]
fn an_install_that_meets_a_file_it_cannot_edit_writes_nothing() {
    let repo = TestEnv::new();
    repo.write(".mcp.json", "{ not json");
    let run = repo.kapi(&["hooks", "install"]).code(2);
    assert_eq!(
        repo.normalize(&run.stderr),
        "error: [ROOT]/work/.mcp.json is not JSON kapi can edit (key must be a string at line 1 column 3); fix it, or add the hooks by hand (docs/hooks.md)\n"
    );
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert!(!repo.join(".claude/settings.json").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        "{ not json"
    );
    // Status reports every hook, the file it cannot read among them, and
    // fails.
    let status = repo.kapi(&["hooks", "status"]).code(2);
    let lines: Vec<String> = repo
        .normalize(&status.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 9, "{lines:?}");
    assert_eq!(
        lines[6],
        "claude mcp server   .mcp.json: unreadable: [ROOT]/work/.mcp.json is not JSON kapi can edit (key must be a string at line 1 column 3); fix it, or add the hooks by hand (docs/hooks.md)"
    );
    repo.write(".mcp.json", "{\"mcpServers\": []}");
    let run = repo.kapi(&["hooks", "install", "--claude"]).code(2);
    assert_eq!(
        repo.normalize(&run.stderr),
        "error: [ROOT]/work/.mcp.json is not JSON kapi can edit (`mcpServers` is not an object); fix it, or add the hooks by hand (docs/hooks.md)\n"
    );
    assert!(!repo.join(".claude/settings.json").exists());
}
