//! `kapi mcp` through the real binary: JSON-RPC lines over its stdin and
//! stdout, as an MCP client speaks them. The server names the agent from
//! `initialize`, mints one session per process, refuses an argument that
//! would name who acts, and keeps serving after bad input.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};

use serde_json::{Value, json};

use crate::common::{DEADLINE, TestEnv, kapi_bin};

/// A running `kapi mcp`, killed when dropped.
pub(super) struct Server {
    child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) lines: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub(super) fn start(repo: &TestEnv) -> Self {
        let mut cmd = Command::new(kapi_bin());
        repo.isolate(&mut cmd);
        // Whatever the process's environment says, the client names the agent.
        cmd.env("KAPI_AGENT", "from-the-environment")
            .env("KAPI_SESSION", "env-session");
        let mut child = cmd
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
        }
    }

    pub(super) fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str) {
        self.send_raw(&json!({"jsonrpc": "2.0", "method": method}).to_string());
    }

    /// Send a request and wait for the response with its id; every line
    /// on stdout must be a JSON-RPC message.
    pub(super) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&msg.to_string());
        loop {
            let line = self
                .lines
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|e| panic!("no answer to {method} (id {id}): {e}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only the protocol: {e}: {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    pub(super) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }
}

fn text_of(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn initialized(repo: &TestEnv, client: &str) -> Server {
    let mut server = Server::start(repo);
    let init = server.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": client, "version": "1.0"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "kapi", "{init}");
    server.notify("notifications/initialized");
    server
}

#[test]
fn an_agent_notes_through_the_server_named_by_its_client_in_one_session() {
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    let mut server = initialized(&repo, "test-agent");

    let listed = server.request(2, "tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "context_note",
        "context_log",
        "context_here",
        "context_search",
        "check",
        "context_session_summary",
    ] {
        assert!(names.contains(&tool), "{tool} in {names:?}");
    }
    for person_verb in ["keep", "drop", "choose", "widen", "reset", "import"] {
        assert!(
            !names.iter().any(|n| n.contains(person_verb)),
            "no person verb: {names:?}"
        );
    }

    let noted = server.call(
        3,
        "context_note",
        json!({"term": "Quickcast", "instead_of": ["Quick cast"], "path": "docs/guide.md"}),
    );
    assert_ne!(noted["result"]["isError"], true, "{noted}");
    let recorded = &noted["result"]["structuredContent"]["recorded"];
    assert_eq!(recorded["actor"]["kind"], "agent", "{noted}");
    assert_eq!(recorded["actor"]["name"], "test-agent", "{noted}");
    let session = recorded["actor"]["session"].as_str().unwrap().to_owned();
    assert!(session.starts_with("mcp-"), "{session}");
    assert!(text_of(&noted).contains("suggested"), "{noted}");

    // A call that names who acts is refused, naming the rule.
    for (id, field) in [(4, "actor"), (5, "session"), (6, "kind")] {
        let refused = server.call(
            id,
            "context_note",
            json!({"text": "Releases ship on Tuesdays", field: "ada@example.com"}),
        );
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        let text = text_of(&refused);
        assert!(
            text.contains(&format!("refusing `{field}`"))
                && text.contains("no tool takes an actor"),
            "{text}"
        );
    }
    // An unknown argument and a wrong type: errors, not writes.
    let unknown = server.call(7, "context_note", json!({"text": "x", "colour": "red"}));
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    assert!(text_of(&unknown).contains("unknown argument `colour`"));
    let wrong = server.call(8, "context_here", json!({"path": 7}));
    assert!(
        wrong["error"].is_object() || wrong["result"]["isError"] == true,
        "{wrong}"
    );
    // Oversized arguments.
    let big = "a".repeat(70 * 1024);
    let oversized = server.call(9, "context_note", json!({"text": big}));
    assert_eq!(oversized["result"]["isError"], true, "{oversized}");
    // An unknown tool: an error; malformed JSON: the server keeps serving.
    let nope = server.call(10, "keep_everything", json!({}));
    assert!(
        nope["error"].is_object() || nope["result"]["isError"] == true,
        "{nope}"
    );
    server.send_raw("{this is not json");
    server.send_raw(r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":"nope"}"#);

    // Reads: the log of this session, what applies here, the summary.
    let log = server.call(12, "context_log", json!({"session": "this"}));
    let ops = log["result"]["structuredContent"]["operations"]
        .as_array()
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(ops.len(), 1, "only the note was written: {log}");
    let here = server.call(13, "context_here", json!({"path": "docs/guide.md"}));
    assert_eq!(
        here["result"]["structuredContent"]["suggestions"][0]["use"], "Quickcast",
        "{here}"
    );
    let found = server.call(14, "context_search", json!({"text": "quickcast"}));
    assert_eq!(
        found["result"]["structuredContent"]["rules"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{found}"
    );
    let checked = server.call(15, "check", json!({"paths": ["docs/guide.md"]}));
    assert_ne!(checked["result"]["isError"], true, "{checked}");
    assert!(
        checked["result"]["structuredContent"].is_object(),
        "{checked}"
    );
    let summary = server.call(16, "context_session_summary", json!({}));
    assert_eq!(
        summary["result"]["structuredContent"]["session"], session,
        "{summary}"
    );
    drop(server);

    // The CLI reads it as the agent's, in the server's session, and a
    // person reviews that session as one.
    let log = repo.kapi(&["context", "log"]).ok();
    assert!(
        log.stdout.contains("agent test-agent [mcp-"),
        "{}",
        log.stdout
    );
    assert!(
        !log.stdout.contains("from-the-environment"),
        "{}",
        log.stdout
    );
    repo.kapi(&["context", "review", "--session", &session, "--keep", "all"])
        .ok();
    let kept = repo.log();
    assert_eq!(kept[0]["status"], "established", "{kept:?}");
}

#[test]
fn a_client_without_a_usable_name_records_nothing() {
    let repo = TestEnv::new();
    let mut server = initialized(&repo, "   ");
    let refused = server.call(2, "context_note", json!({"text": "a fact", "quote": "q"}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(text_of(&refused).contains("clientInfo.name"), "{refused}");
    drop(server);
    assert!(repo.log().is_empty());
}

/// The CLI's compile of the fixture vault (copied to `decisions/`) that
/// the server's `compile_context` is held to.
const COMPILE_FIXTURE_VAULT: [&str; 9] = [
    "compile-context",
    "--query",
    "review",
    "--max-docs",
    "3",
    "--max-bytes",
    "8192",
    "--today",
    "2026-11-30",
];

/// The Python the MCP SDK is installed for: `KAPI_MCP_PYTHON`, else the
/// virtual environment ci/run makes (`~/.cache/kapi-venv`), else
/// `python3`.
fn python_with_mcp() -> Result<std::path::PathBuf, String> {
    let venv = std::env::var_os("HOME")
        .map(|h| std::path::PathBuf::from(h).join(".cache/kapi-venv/bin/python3"));
    let candidates: Vec<std::path::PathBuf> = std::env::var_os("KAPI_MCP_PYTHON")
        .map(Into::into)
        .into_iter()
        .chain(venv.filter(|p| p.exists()))
        .chain(std::iter::once("python3".into()))
        .collect();
    for python in &candidates {
        let imports = Command::new(python)
            .args(["-c", "import mcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if imports.is_ok_and(|s| s.success()) {
            return Ok(python.clone());
        }
    }
    Err(format!(
        "none of {candidates:?} can `import mcp` (ci/run installs it: python3 -m venv ~/.cache/kapi-venv && ~/.cache/kapi-venv/bin/pip install mcp)"
    ))
}

#[test]
fn the_official_python_sdk_drives_every_tool() {
    let python = match python_with_mcp() {
        Ok(p) => p,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    // A vault, and a context compiled from it, for compile_context and
    // verify_context.
    copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault"),
        &repo.join("decisions"),
    );
    let compiled = repo.kapi(&COMPILE_FIXTURE_VAULT).ok();
    std::fs::write(repo.join("ctx.json"), compiled.stdout.as_bytes()).unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/test_mcp_client.py");
    let home = repo.root().join("home");
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .arg(kapi_bin())
        .arg(repo.path())
        .arg(&home)
        .env_remove("KAPI_AGENT")
        .env_remove("KAPI_SESSION")
        .env_remove("CLAUDECODE");
    let run = crate::common::within_deadline(cmd, b"");
    assert_eq!(
        run.code, 0,
        "the Python SDK's client failed\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let session = run
        .stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("SESSION "))
        .unwrap_or_else(|| panic!("no session in {}", run.stdout))
        .to_owned();
    let log = repo.kapi(&["context", "log", "--session", &session]).ok();
    assert!(
        log.stdout.contains("agent python-sdk-agent ["),
        "{}",
        log.stdout
    );
    repo.kapi(&["context", "review", "--session", &session, "--keep", "all"])
        .ok();
    let established = repo
        .kapi(&["context", "log", "--status", "established"])
        .ok();
    assert!(
        established.stdout.contains("Quickcast"),
        "{}",
        established.stdout
    );
}

#[test]
fn hooks_install_claude_registers_the_server_and_uninstall_removes_exactly_it() {
    let repo = TestEnv::new();
    let before = "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    }\n  }\n}\n";
    repo.write(".mcp.json", before);
    let installed = repo.kapi(&["hooks", "install", "--claude"]).ok();
    assert!(
        installed
            .stdout
            .contains("mcp server   .mcp.json: installed"),
        "{}",
        installed.stdout
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(
        config["mcpServers"]["kapi"],
        json!({"type": "stdio", "command": "kapi", "args": ["mcp"], "env": {}})
    );
    // The user's keys and servers keep their order; kapi's comes last.
    let text = std::fs::read_to_string(repo.join(".mcp.json")).unwrap();
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {text}"))
    };
    assert!(at("\"zeta\"") < at("\"mcpServers\""), "{text}");
    assert!(at("\"other\"") < at("\"kapi\""), "{text}");
    repo.kapi(&["hooks", "uninstall", "--claude"]).ok();
    assert_eq!(
        std::fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        before,
        "uninstall leaves the file as it was"
    );

    // A `kapi` entry someone else wrote is never touched.
    let theirs = "{\n  \"mcpServers\": {\n    \"kapi\": {\n      \"command\": \"/opt/kapi\"\n    }\n  }\n}\n";
    repo.write(".mcp.json", theirs);
    let run = repo.kapi(&["hooks", "install", "--claude"]).ok();
    assert!(
        run.stdout
            .contains("mcp server   .mcp.json: not kapi's: left alone"),
        "{}",
        run.stdout
    );
    repo.kapi(&["hooks", "uninstall", "--claude"]).ok();
    assert_eq!(
        std::fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        theirs
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

#[test]
fn compile_context_and_verify_context_through_the_server() {
    let repo = TestEnv::new();
    copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault"),
        &repo.join("decisions"),
    );
    let mut server = initialized(&repo, "compile-agent");
    let compiled = server.call(
        2,
        "compile_context",
        json!({"query": "review", "max_docs": 3, "max_bytes": 8192, "today": "2026-11-30"}),
    );
    assert_ne!(compiled["result"]["isError"], true, "{compiled}");
    let doc = compiled["result"]["structuredContent"].clone();
    assert!(doc.is_object(), "{compiled}");
    // The same artifact, byte for byte, as the CLI compiles.
    let cli = repo.kapi(&COMPILE_FIXTURE_VAULT).ok();
    let cli_doc: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(doc, cli_doc);
    std::fs::write(repo.join("ctx.json"), cli.stdout.as_bytes()).unwrap();
    let verified = server.call(
        3,
        "verify_context",
        json!({"artifact": "ctx.json", "today": "2026-11-30"}),
    );
    assert_eq!(
        verified["result"]["structuredContent"]["status"], "current",
        "{verified}"
    );
    let stale = server.call(
        4,
        "verify_context",
        json!({"artifact": "ctx.json", "today": "2026-12-01"}),
    );
    assert_eq!(
        stale["result"]["structuredContent"]["status"], "stale",
        "{stale}"
    );
    // Only a file of the work tree is read.
    let outside = server.call(5, "verify_context", json!({"artifact": "/etc/passwd"}));
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    // The grant is the caller's to narrow, never a vault elsewhere.
    let rooted = server.call(6, "compile_context", json!({"root": "/"}));
    assert_eq!(rooted["result"]["isError"], true, "{rooted}");
}

/// The text of a tool error, or a panic naming what came back instead.
fn refusal_of(response: &Value) -> String {
    assert_eq!(response["result"]["isError"], true, "{response}");
    text_of(response)
}

#[test]
fn apply_edits_writes_the_edits_and_an_applied_signal_for_the_suggestion_they_write() {
    let repo = TestEnv::new();
    repo.write(
        "docs/guide.md",
        "Quick cast streams video.\n\nQuick cast records.\n",
    );
    repo.git(&["add", "."]);
    repo.git(&["commit", "-qm", "guide"]);
    let suggestion = repo
        .agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--quote", "Quick cast", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut server = initialized(&repo, "editor-agent");

    let applied = server.call(
        2,
        "apply_edits",
        json!({"edits": [
            {"path": "docs/guide.md", "old": "Quick cast streams", "new": "Quickcast streams"},
            {"path": "docs/guide.md", "old": "Quick cast records", "new": "Quickcast records"},
        ]}),
    );
    assert_ne!(applied["result"]["isError"], true, "{applied}");
    assert_eq!(
        text_of(&applied),
        "applied 2 edits to 1 file; 1 applied signal"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/guide.md")).unwrap(),
        "Quickcast streams video.\n\nQuickcast records.\n"
    );
    let doc = &applied["result"]["structuredContent"];
    assert_eq!(doc["files"], json!([{"path": "docs/guide.md", "edits": 2}]));
    assert_eq!(doc["signals"][0]["target"], json!(suggestion), "{doc}");
    assert_eq!(doc["signals"][0]["preferred"], 2, "{doc}");
    let session = doc["session"].as_str().unwrap();

    // Recorded as the tool `apply`, in the agent's session; standing only.
    let signals: Vec<Value> = repo
        .log()
        .into_iter()
        .filter(|op| op["kind"] == "signal")
        .collect();
    assert_eq!(signals.len(), 1, "{signals:?}");
    assert_eq!(
        signals[0]["actor"],
        json!({"kind": "tool", "name": "apply", "session": session})
    );
    let here = repo
        .kapi(&["context", "docs/guide.md", "--json"])
        .ok()
        .json();
    let s = &here["suggestions"][0];
    assert_eq!(s["status"], "suggested", "{here}");
    assert_eq!(s["standing"], "seen in 1 session · applied 1×", "{here}");

    // An edit that writes no suggestion's form records nothing.
    let plain = server.call(
        3,
        "apply_edits",
        json!({"edits": [{"path": "docs/guide.md", "old": "video", "new": "films"}]}),
    );
    assert_eq!(
        text_of(&plain),
        "applied 1 edit to 1 file; 0 applied signals"
    );
}

#[test]
fn check_with_fix_rewrites_prose_in_the_servers_session_and_diff_only_shows_it() {
    let repo = TestEnv::new();
    let guide = "Quick cast streams video.\n\n```\nQuick cast --help\n```\n\nquick cast records.\n";
    repo.write("docs/guide.md", guide);
    repo.git(&["add", "."]);
    repo.git(&["commit", "-qm", "guide"]);
    repo.kept_rule("Quickcast", "Quick cast");
    // Another agent's suggestion of the same form: the fix writes it.
    let suggestion = repo
        .agent_term(
            "s1",
            "Quickcast",
            "Quik cast",
            &["--quote", "Quik cast", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut server = initialized(&repo, "editor-agent");

    let shown = server.call(
        2,
        "check",
        json!({"paths": ["docs/guide.md"], "diff": true}),
    );
    assert_eq!(
        text_of(&shown),
        "would fix 2 findings in 1 file; nothing was written"
    );
    let doc = &shown["result"]["structuredContent"];
    assert_eq!(
        doc["diff"],
        "--- a/docs/guide.md\n+++ b/docs/guide.md\n@@ -1,7 +1,7 @@\n-Quick cast streams video.\n+Quickcast streams video.\n \n ```\n Quick cast --help\n ```\n \n-quick cast records.\n+Quickcast records.\n",
        "{doc}"
    );
    assert_eq!(
        doc["fixed"],
        json!([{"path": "docs/guide.md", "fixes": 2, "left": 0}])
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/guide.md")).unwrap(),
        guide
    );

    let both = server.call(3, "check", json!({"fix": true, "diff": true}));
    assert_eq!(
        refusal_of(&both),
        "`diff` shows what `fix` would write and writes nothing: give one of them"
    );

    let fixed = server.call(4, "check", json!({"paths": ["docs/guide.md"], "fix": true}));
    assert_ne!(fixed["result"]["isError"], true, "{fixed}");
    assert_eq!(
        text_of(&fixed),
        "fixed 2 findings in 1 file; 0 failing, 0 findings in all remain"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/guide.md")).unwrap(),
        "Quickcast streams video.\n\n```\nQuick cast --help\n```\n\nQuickcast records.\n"
    );
    let doc = &fixed["result"]["structuredContent"];
    assert_eq!(doc["summary"]["failing"], 0, "{doc}");
    let session = doc["session"].as_str().unwrap();
    assert!(session.starts_with("mcp-"), "{doc}");
    // The applied signal is the server's session's, as apply_edits's.
    assert_eq!(doc["signals"][0]["target"], json!(suggestion), "{doc}");
    assert_eq!(doc["signals"][0]["preferred"], 2, "{doc}");
    let signals: Vec<Value> = repo
        .log()
        .into_iter()
        .filter(|op| op["kind"] == "signal" && op["signal"]["source"] == "applied")
        .collect();
    assert_eq!(signals.len(), 1, "{signals:?}");
    assert_eq!(
        signals[0]["actor"],
        json!({"kind": "tool", "name": "apply", "session": session})
    );
    // Nothing left: a second call fixes nothing.
    let again = server.call(5, "check", json!({"fix": true}));
    assert_eq!(
        text_of(&again),
        "fixed 0 findings in 0 files; 0 failing, 0 findings in all remain"
    );
}

#[test]
fn apply_edits_writes_nothing_outside_the_work_tree_through_a_link_under_git_or_in_part() {
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    repo.write("docs/twice.md", "one cat, one cat\n");
    repo.write("kapi.toml", "[context]\nsettle = \"keep-only\"\n");
    repo.write(".claude/settings.json", "{\"hooks\": {}}\n");
    repo.write(".mcp.json", "{\"mcpServers\": {}}\n");
    let outside = repo.sibling("outside");
    outside.write("secret.md", "Quick cast\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.join("secret.md"), repo.join("docs/link.md")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), repo.join("linked")).unwrap();
    let mut server = initialized(&repo, "editor-agent");
    let edit = |path: &str, old: &str| json!({"edits": [{"path": path, "old": old, "new": "x"}]});

    let cases = [
        (
            edit("../outside/secret.md", "Quick cast"),
            "../outside/secret.md is outside the work tree",
        ),
        (
            edit(".git/config", "bare"),
            ".git/config: kapi writes nothing under .git; nothing was written",
        ),
        (
            edit("docs/link.md", "Quick cast"),
            "docs/link.md: it is reached through a symbolic link, which kapi does not write through; nothing was written",
        ),
        (
            edit("linked/secret.md", "Quick cast"),
            "linked/secret.md: it is reached through a symbolic link, which kapi does not write through; nothing was written",
        ),
        // What holds an agent to the rules is a person's to change.
        (
            edit("kapi.toml", "keep-only"),
            "kapi.toml: kapi's configuration and the agent hosts' settings (kapi.toml, .kapi/, .claude/, .codex/, .mcp.json) are a person's to change, not an agent's through kapi; nothing was written",
        ),
        (
            edit(".Claude/settings.json", "hooks"),
            ".Claude/settings.json: kapi's configuration and the agent hosts' settings",
        ),
        (
            edit(".mcp.json", "mcpServers"),
            ".mcp.json: kapi's configuration and the agent hosts' settings",
        ),
        (
            edit("docs/missing.md", "a"),
            "docs/missing.md: no such file in the work tree (apply_edits edits files that exist); nothing was written",
        ),
        (
            edit("docs/twice.md", "cat"),
            "edit 1: docs/twice.md holds the text to replace 2 times; give more of it, so it names one place; nothing was written",
        ),
        (
            edit("docs/guide.md", ""),
            "edit 1: `old` is empty; give the text to replace, as the file holds it",
        ),
        // All or none: the first edit is good, the second is not.
        (
            json!({"edits": [
                {"path": "docs/guide.md", "old": "Quick cast", "new": "Quickcast"},
                {"path": "docs/twice.md", "old": "nowhere", "new": "x"},
            ]}),
            "edit 2: docs/twice.md does not hold the text to replace; nothing was written",
        ),
    ];
    for (n, (args, expected)) in cases.into_iter().enumerate() {
        let refused = server.call(2 + n as u64, "apply_edits", args);
        let text = refusal_of(&refused);
        assert!(text.starts_with(expected), "case {n}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/guide.md")).unwrap(),
        "Quick cast streams video.\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("docs/twice.md")).unwrap(),
        "one cat, one cat\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.md")).unwrap(),
        "Quick cast\n"
    );
    // Too many edits at once.
    let many: Vec<Value> = (0..65)
        .map(|_| json!({"path": "docs/guide.md", "old": "Quick", "new": "Quick"}))
        .collect();
    let refused = server.call(20, "apply_edits", json!({"edits": many}));
    assert_eq!(
        refusal_of(&refused),
        "65 edits; one call applies at most 64"
    );
    assert!(repo.log().iter().all(|op| op["kind"] != "signal"));
}

#[test]
fn context_here_lists_a_bounded_number_of_each_and_counts_the_rest() {
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    for (n, term) in ["Alphax", "Betax", "Gammax"].iter().enumerate() {
        let avoided = format!("{} x", &term[..term.len() - 1]);
        repo.agent_term(&format!("s{n}"), term, &avoided, &["--quote", "seen"])
            .ok();
    }
    let mut server = initialized(&repo, "reader-agent");
    let all = server.call(2, "context_here", json!({"path": "docs/guide.md"}));
    let doc = &all["result"]["structuredContent"];
    assert_eq!(doc["suggestions"].as_array().unwrap().len(), 3, "{doc}");
    assert_eq!(doc.get("omitted"), None, "{doc}");

    let two = server.call(
        3,
        "context_here",
        json!({"path": "docs/guide.md", "limit": 2}),
    );
    let doc = &two["result"]["structuredContent"];
    let listed: Vec<&str> = doc["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["use"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["Alphax", "Betax"]);
    assert_eq!(doc["omitted"], json!({"suggestions": 1}));
    assert_eq!(
        text_of(&two),
        "docs/guide.md: 0 rule(s), 0 note(s), 3 suggestion(s), 0 held elsewhere; 2 of each listed, the rest counted in `omitted` (ask with a higher `limit`, or narrow with context_search)"
    );
    for (id, limit) in [(4, 0), (5, 1001)] {
        let refused = server.call(
            id,
            "context_here",
            json!({"path": "docs/guide.md", "limit": limit}),
        );
        assert_eq!(
            refusal_of(&refused),
            format!("limit {limit}: give 1 to 1000 (items in each list)")
        );
    }
}

/// A server whose agent only checks, notes, searches and asks what
/// applies keeps the reader's view, never the whole ledger (at a million operations
/// ~500 MB in each server): with the whole ledger's checkpoint gone it
/// is not read again, and the view the server answers from follows the
/// log as other processes and the server itself record.
#[test]
fn a_server_that_only_checks_and_notes_never_reads_the_whole_ledger() {
    let repo = TestEnv::new();
    let kept = repo
        .agent_term(
            "s1",
            "Quickcast",
            "Quick cast",
            &["--quote", "seen", "--json"],
        )
        .ok();
    let kept: Value = serde_json::from_str(kept.stdout.trim()).unwrap();
    repo.kapi(&[
        "context",
        "review",
        "--keep",
        &kept["id"].as_str().unwrap()[..10],
    ])
    .ok();
    repo.write("docs/guide.md", "Open Quick cast and the Widget bar.\n");
    repo.kapi(&["check", "docs/guide.md"]).code(1);
    repo.kapi(&["context", "search", "cast"]).ok();
    let base = repo.join(".git/kapi/fold.base");
    assert!(base.exists(), "a read leaves the whole ledger's checkpoint");
    std::fs::remove_file(&base).unwrap();

    let mut server = initialized(&repo, "checking-agent");
    let found = |server: &mut Server, id: u64| -> Vec<String> {
        let checked = server.call(id, "check", json!({"paths": ["docs/guide.md"]}));
        let doc = &checked["result"]["structuredContent"];
        let mut rules: Vec<String> = doc["findings"]
            .as_array()
            .unwrap_or_else(|| panic!("{checked}"))
            .iter()
            .map(|f| f["preferred"].as_str().unwrap_or_default().to_owned())
            .collect();
        rules.sort();
        rules
    };
    assert_eq!(found(&mut server, 2), ["Quickcast"]);
    repo.agent_term("s2", "Widgetbar", "Widget bar", &["--quote", "seen"])
        .ok();
    assert_eq!(found(&mut server, 3), ["Quickcast", "Widgetbar"]);
    let noted = server.call(
        4,
        "context_note",
        json!({"term": "Guidebar", "instead_of": ["Guide bar"], "quote": "seen"}),
    );
    assert_eq!(noted["result"]["isError"], false, "{noted}");
    repo.write(
        "docs/guide.md",
        "Open Quick cast, the Widget bar and the Guide bar.\n",
    );
    assert_eq!(
        found(&mut server, 5),
        ["Guidebar", "Quickcast", "Widgetbar"]
    );
    let here = server.call(6, "context_here", json!({"path": "docs/guide.md"}));
    let doc = &here["result"]["structuredContent"];
    assert_eq!(doc["suggestions"].as_array().unwrap().len(), 2, "{doc}");
    // A search and a listing of one kind read the view with every
    // decision, through its checkpoint.
    let searched = server.call(7, "context_search", json!({"text": "bar"}));
    let doc = &searched["result"]["structuredContent"];
    assert_eq!(doc["rules"].as_array().unwrap().len(), 2, "{doc}");
    let kept = server.call(8, "context_log", json!({"kind": "keep"}));
    assert_eq!(kept["result"]["isError"], false, "{kept}");
    assert!(!base.exists(), "the server read the whole ledger");

    // A reader of the whole ledger (this session's summary) reads it.
    let summary = server.call(9, "context_session_summary", json!({}));
    assert_eq!(summary["result"]["isError"], false, "{summary}");
    assert!(base.exists(), "the summary reads the whole ledger");
}

#[test]
fn context_log_lists_what_the_command_line_lists_for_every_filter() {
    // The server reads a listing as the command line does (by status the
    // reader's view, by a kind decisions hold the view with the
    // decisions): the same operations, byte for byte as JSON.
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video. A Wid get.\n");
    repo.kept_rule("Quickcast", "Quick cast");
    repo.suggested_rule("Widget", "Wid get");
    let dropped = repo.suggested_rule("Gizmo", "Giz mo");
    repo.kapi(&["context", "review", "--drop", &dropped]).ok();
    repo.agent_term("s1", "Gadget", "Gad get", &["--quote", "a Gad get"])
        .ok();
    repo.kapi(&["check", "docs"]).code(1);
    let mut server = initialized(&repo, "test-agent");
    for (n, (args, flags)) in [
        (json!({}), vec![]),
        (
            json!({"status": "suggested"}),
            vec!["--status", "suggested"],
        ),
        (
            json!({"status": "established"}),
            vec!["--status", "established"],
        ),
        (json!({"status": "dropped"}), vec!["--status", "dropped"]),
        (json!({"kind": "observe"}), vec!["--kind", "observe"]),
        (json!({"kind": "keep"}), vec!["--kind", "keep"]),
        (json!({"kind": "drop"}), vec!["--kind", "drop"]),
        (
            json!({"status": "suggested", "kind": "observe"}),
            vec!["--status", "suggested", "--kind", "observe"],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut cli = vec!["context", "log", "--json"];
        cli.extend(flags);
        let expected = repo.kapi(&cli).ok().json_lines();
        let answer = server.call(10 + n as u64, "context_log", args.clone());
        let listed = answer["result"]["structuredContent"]["operations"]
            .as_array()
            .unwrap_or_else(|| panic!("{args}: {answer}"))
            .clone();
        assert_eq!(listed, expected, "{args}");
        assert!(
            !listed.is_empty() || args == json!({"kind": "keep"}),
            "{args}"
        );
    }
}
