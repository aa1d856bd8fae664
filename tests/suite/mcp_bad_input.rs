//! `kapi mcp` against bad input, through the real binary, with the bytes
//! no SDK would send written by hand: malformed JSON-RPC, unknown tools,
//! wrong argument types, arguments over the bounds, a client that goes
//! away mid-call, a thousand calls in a burst. Each gets a protocol or a
//! tool error (or is ignored, as rmcp ignores a line that is not JSON),
//! the server keeps serving, and nothing is half-written.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp::{Server, initialized};
use crate::common::{DEADLINE, TestEnv, kapi_bin};

/// What a line of the conversation waits for: the answer with its id, or
/// (a line that carries no usable id) the answer to a `ping` sent after
/// it, so whatever the server wrote in between is all it said.
enum Await {
    Id(u64),
    Ping(u64),
}

/// A conversation with the server as text for a snapshot: `→` a line
/// sent (or what it was, for a line too long to show), `←` each line the
/// server wrote in answer, `← nothing` when it wrote none.
struct Conversation {
    server: Server,
    text: String,
}

impl Conversation {
    fn say(&mut self, shown: &str, bytes: &[u8], until: Await) {
        self.server.stdin.write_all(bytes).unwrap();
        self.server.stdin.write_all(b"\n").unwrap();
        let awaited = match until {
            Await::Id(id) => id,
            Await::Ping(id) => {
                self.server
                    .send_raw(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string());
                id
            }
        };
        self.text.push_str(&format!("→ {shown}\n"));
        let mut answered = false;
        loop {
            let line = self
                .server
                .lines
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|e| panic!("no answer after {shown}: {e}\n{}", self.text));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only the protocol: {e}: {line}"));
            if v["id"] == json!(awaited) {
                if let Await::Ping(_) = until {
                    assert_eq!(v, json!({"jsonrpc": "2.0", "id": awaited, "result": {}}));
                } else {
                    self.text.push_str(&format!("← {line}\n"));
                    answered = true;
                }
                break;
            }
            self.text.push_str(&format!("← {line}\n"));
            answered = true;
        }
        if !answered {
            self.text.push_str("← nothing\n");
        }
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}})
        .to_string();
        self.say(&line, line.as_bytes(), Await::Id(id));
    }
}

#[test]
fn every_bad_line_gets_a_protocol_or_tool_error_or_is_ignored_and_the_server_keeps_serving() {
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    let mut c = Conversation {
        server: initialized(&repo, "bad-input-agent"),
        text: String::new(),
    };
    // Not JSON at all, or not UTF-8: ignored, as every official SDK does
    // (answering bytes with no id could start an echo storm).
    for (i, (shown, garbage)) in [
        ("{this is not json", &b"{this is not json"[..]),
        ("(the bytes ff fe, then {})", b"\xff\xfe{}"),
        ("(three spaces)", b"   "),
    ]
    .into_iter()
    .enumerate()
    {
        c.say(shown, garbage, Await::Ping(100 + i as u64));
    }
    // JSON that is not a JSON-RPC message, or a request whose `params` or
    // `jsonrpc` has the wrong type: rmcp answers Invalid Request, with no
    // id when it could not read the message.
    for (i, line) in [
        "[1,2,3]",
        r#"{"foo":1}"#,
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":"nope"}"#,
        r#"{"jsonrpc":"1.0","id":12,"method":"tools/list"}"#,
    ]
    .into_iter()
    .enumerate()
    {
        c.say(line, line.as_bytes(), Await::Ping(110 + i as u64));
    }
    // A response to nothing the server asked, and a notification no one
    // defined: ignored.
    for (i, line) in [
        r#"{"jsonrpc":"2.0","id":99,"result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/kapi/whatever"}"#,
    ]
    .into_iter()
    .enumerate()
    {
        c.say(line, line.as_bytes(), Await::Ping(120 + i as u64));
    }
    // Requests with an id but a wrong shape, an unknown method, an
    // unknown tool: a protocol error under that id.
    for line in [
        r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"check","arguments":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":15,"method":"kapi/keep","params":{}}"#,
    ] {
        let id = serde_json::from_str::<Value>(line).unwrap()["id"]
            .as_u64()
            .unwrap();
        c.say(line, line.as_bytes(), Await::Id(id));
    }
    c.call(16, "keep", json!({"id": "0ty5"}));
    // Arguments of the wrong type or missing: a tool error naming the
    // argument.
    c.call(17, "check", json!({"paths": 5}));
    c.call(18, "check", json!({"paths": ["docs/guide.md", 7]}));
    c.call(19, "context_note", json!({"text": "x", "suggest": "yes"}));
    c.call(20, "compile_context", json!({"max_docs": -1}));
    c.call(21, "context_here", json!({}));
    c.call(22, "context_search", json!({"text": null}));
    // Arguments over the server's bound (MAX_ARGUMENTS, 64 KiB): a tool
    // error saying so.
    let text = "a".repeat(70 * 1024);
    let over = json!({"jsonrpc": "2.0", "id": 23, "method": "tools/call",
                      "params": {"name": "context_note", "arguments": {"text": text, "quote": "a"}}});
    c.say(
        r#"{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"context_note","arguments":{"text":"aaa… (70 KiB)","quote":"a"}}}"#,
        over.to_string().as_bytes(),
        Await::Id(23),
    );
    // A line over rmcp's own bound (16 MiB): dropped unread, the server
    // goes on with the next line.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{{"name":"context_note","arguments":{{"text":"{}"}}}}}}"#,
        "a".repeat(17 * 1024 * 1024)
    );
    c.say(
        r#"{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"context_note","arguments":{"text":"aaa… (17 MiB)"}}}"#,
        huge.as_bytes(),
        Await::Ping(124),
    );
    // Still serving, and nothing was written.
    c.call(25, "context_log", json!({}));
    let mut transcript = c.text.clone();
    drop(c);
    let log = repo.kapi(&["context", "log"]).ok();
    transcript.push_str(&format!("$ kapi context log\n{}", log.stdout));
    insta::assert_snapshot!(transcript);
}

/// How the client goes away right after sending a call.
#[derive(Clone, Copy, Debug)]
enum HangUp {
    /// Closes its end of stdin, still reading.
    Stdin,
    /// Closes both ends, as a killed client does.
    Both,
}

#[test]
fn a_client_that_goes_away_mid_call_leaves_the_note_whole_or_absent_and_the_server_exits() {
    let mut recorded = BTreeMap::new();
    for _ in 0..4 {
        for hang_up in [HangUp::Stdin, HangUp::Both] {
            let repo = TestEnv::new();
            repo.write("docs/guide.md", "Quick cast streams video.\n");
            let mut cmd = Command::new(kapi_bin());
            repo.isolate(&mut cmd);
            let mut child = cmd
                .arg("mcp")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = BufReader::new(child.stdout.take().unwrap());
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "hang-up-agent", "version": "1.0"}}});
            writeln!(stdin, "{init}").unwrap();
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(&line).unwrap()["id"],
                1,
                "{line}"
            );
            let note = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "context_note", "arguments": {
                    "term": "Quickcast", "instead_of": ["Quick cast"], "quote": "Quick cast"}}});
            let said = format!(
                "{}\n{note}\n",
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
            );
            stdin.write_all(said.as_bytes()).unwrap();
            drop(stdin);
            let mut after = Vec::new();
            match hang_up {
                HangUp::Stdin => {
                    for line in stdout.lines() {
                        after.push(line.unwrap());
                    }
                }
                HangUp::Both => drop(stdout),
            }
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if started.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    panic!("{hang_up:?}: kapi mcp still running 10 s after its client went away");
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
            assert_eq!(status.code(), Some(0), "{hang_up:?}: {stderr}");
            // Only the server's greeting on stderr: no error, no panic.
            let stderr = repo.normalize(&stderr);
            let greeting: Vec<_> = stderr
                .lines()
                .map(|l| l.split_once(" as session ").map(|(at, _)| at))
                .collect();
            assert_eq!(
                greeting,
                [Some("kapi mcp: serving [ROOT]/work")],
                "{hang_up:?}: {stderr}"
            );
            // Whatever it wrote after the client left is whole protocol.
            for line in &after {
                let v: Value = serde_json::from_str(line).unwrap();
                assert_eq!(v["id"], 2, "{line}");
            }
            // The store reads clean; the note is there whole, or not at all.
            repo.kapi(&["store", "doctor"]).ok();
            let log = repo.log();
            match log.as_slice() {
                [] => {}
                [op] => {
                    assert_eq!(op["kind"], "observe", "{op}");
                    assert_eq!(op["subject"]["use"], "Quickcast", "{op}");
                    assert_eq!(op["actor"]["name"], "hang-up-agent", "{op}");
                    assert_eq!(op["evidence"], json!([{"quote": "Quick cast"}]), "{op}");
                }
                more => panic!("{hang_up:?}: one call, {} operations: {more:?}", more.len()),
            }
            *recorded
                .entry(format!("{hang_up:?}, recorded: {}", log.len()))
                .or_insert(0) += 1;
        }
    }
    println!("{recorded:?}");
}

#[test]
fn a_thousand_calls_in_a_burst_are_each_answered_once_and_the_server_keeps_serving() {
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    let mut server = initialized(&repo, "burst-agent");
    // Good and bad calls, in turn: what each should get back.
    let calls: [(&str, Value); 6] = [
        ("context_here", json!({"path": "docs/guide.md"})),
        ("check", json!({"paths": ["docs/guide.md"]})),
        ("context_log", json!({"status": "suggested"})),
        ("no_such_tool", json!({})),
        ("check", json!({"paths": 5})),
        (
            "context_note",
            json!({"text": "a fact", "quote": "q", "actor": "ada"}),
        ),
    ];
    let ids = 1000..2000u64;
    let mut burst = String::new();
    for id in ids.clone() {
        let (tool, arguments) = &calls[id as usize % calls.len()];
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        burst.push_str(&call.to_string());
        burst.push('\n');
        // Now and then a line that is not JSON (ignored) and one that is
        // not JSON-RPC (an Invalid Request with no id).
        if id % 50 == 0 {
            burst.push_str("{not json\n{\"foo\":1}\n");
        }
    }
    let invalid =
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}});
    let mut without_id = 0;
    let started = Instant::now();
    // One write, not waiting for any answer (a thread drains stdout).
    server.stdin.write_all(burst.as_bytes()).unwrap();
    server.stdin.flush().unwrap();
    let mut answers: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    while answers.len() < ids.clone().count() {
        let line = server
            .lines
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|e| panic!("{} of 1000 calls answered: {e}", answers.len()));
        let v: Value = serde_json::from_str(&line).expect("stdout carries only the protocol");
        if v == invalid {
            without_id += 1;
            continue;
        }
        let id = v["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("an answer without an id: {v}"));
        assert!(ids.contains(&id), "an answer to no call: {v}");
        answers.entry(id).or_default().push(v);
    }
    let took = started.elapsed();
    println!("1000 calls answered in {took:?}");
    // Still serving: a call after the burst is answered (and nothing of
    // the burst after it), and nothing the burst held was written.
    server.send_raw(
        &json!({"jsonrpc": "2.0", "id": 5000, "method": "tools/call",
                "params": {"name": "context_log", "arguments": {}}})
        .to_string(),
    );
    let log = loop {
        let line = server.lines.recv_timeout(DEADLINE).unwrap();
        let v: Value = serde_json::from_str(&line).expect("stdout carries only the protocol");
        if v == invalid {
            without_id += 1;
        } else if v["id"] == 5000 {
            break v;
        } else {
            panic!("answered again after the burst: {v}");
        }
    };
    assert_eq!(
        log["result"]["structuredContent"]["operations"],
        json!([]),
        "{log}"
    );
    assert_eq!(without_id, 20);
    // Every id once, and calls alike got alike answers.
    let mut by_call: BTreeMap<usize, Value> = BTreeMap::new();
    for (id, got) in &answers {
        assert_eq!(
            got.len(),
            1,
            "id {id} answered {} times: {got:?}",
            got.len()
        );
        let mut answer = got[0].clone();
        answer["id"] = json!(null);
        let first = by_call
            .entry(*id as usize % calls.len())
            .or_insert_with(|| answer.clone());
        assert_eq!(*first, answer, "id {id}");
    }
    let result = |i: usize| by_call[&i]["result"].clone();
    for i in 0..3 {
        assert_eq!(result(i)["isError"], false, "{}", by_call[&i]);
    }
    assert_eq!(
        result(0)["structuredContent"]["path"],
        "docs/guide.md",
        "{}",
        by_call[&0]
    );
    assert_eq!(result(1)["structuredContent"]["findings"], json!([]));
    assert_eq!(result(2)["structuredContent"]["operations"], json!([]));
    assert_eq!(
        by_call[&3],
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32602, "message": "tool not found"}})
    );
    assert_eq!(
        result(4),
        json!({"content": [{"type": "text",
                            "text": "argument `paths` of check takes an array of strings, not 5"}],
               "isError": true})
    );
    assert_eq!(result(5)["isError"], true);
    assert_eq!(
        result(5)["content"][0]["text"]
            .as_str()
            .unwrap()
            .split(':')
            .next(),
        Some("refusing `actor`")
    );
    assert!(took < DEADLINE, "{took:?}");
}
