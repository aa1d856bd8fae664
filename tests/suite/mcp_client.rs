//! `kapi mcp` driven by the official Rust SDK's client (rmcp's
//! `TokioChildProcess`), a client kapi did not write beside the Python
//! SDK's: initialize with a client name, the tool list, a note the CLI
//! reads as that client's, the reads as typed results, the refusals.

use std::future::Future;
use std::process::{Command, Stdio};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ErrorCode,
    Implementation,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{DEADLINE, TestEnv, kapi_bin};

/// The name the client gives in `initialize`.
const CLIENT: &str = "rust-sdk-test";

type Client = RunningService<RoleClient, ClientConfig>;

/// `fut`, or fail the test when it takes longer than [`DEADLINE`].
async fn timely<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {DEADLINE:?}"))
}

/// `kapi mcp` in `repo`, initialized by the Rust SDK as [`CLIENT`].
async fn connect(repo: &TestEnv) -> Client {
    let mut cmd = Command::new(kapi_bin());
    repo.isolate(&mut cmd);
    // Whatever the process's environment says, the client names the agent.
    cmd.arg("mcp")
        .env("KAPI_AGENT", "from-the-environment")
        .env("KAPI_SESSION", "env-session");
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(CLIENT, "1.0"),
    );
    timely("initialize", config.serve(transport)).await.unwrap()
}

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object: {arguments}")
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    timely(tool, client.call_tool(params)).await
}

/// A call that must succeed, its structured content read as `T`.
async fn typed<T: serde::de::DeserializeOwned>(client: &Client, tool: &str, arguments: Value) -> T {
    let result = call(client, tool, arguments).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{tool}: {result:?}");
    result
        .into_typed()
        .unwrap_or_else(|e| panic!("{tool}: the structured content does not read: {e}"))
}

/// A tool error's text.
fn refusal_text(result: &CallToolResult) -> &str {
    assert_eq!(result.is_error, Some(true), "not a tool error: {result:?}");
    &result.content[0].as_text().unwrap().text
}

#[derive(Debug, Deserialize, PartialEq)]
struct Actor {
    kind: String,
    name: String,
    session: String,
}

#[derive(Debug, Deserialize)]
struct Subject {
    #[serde(rename = "type")]
    what: String,
    #[serde(rename = "use")]
    term: String,
    avoid: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Recorded {
    id: String,
    kind: String,
    actor: Actor,
    subject: Subject,
    evidence: Vec<Value>,
}

/// `context_note`'s answer.
#[derive(Debug, Deserialize)]
struct Noted {
    recorded: Recorded,
    session: String,
}

#[derive(Debug, Deserialize)]
struct Suggestion {
    id: String,
    #[serde(rename = "use")]
    term: String,
    status: String,
}

/// `context_here`'s answer.
#[derive(Debug, Deserialize)]
struct Here {
    path: String,
    rules: Vec<Value>,
    notes: Vec<Value>,
    suggestions: Vec<Suggestion>,
    elsewhere: Vec<Value>,
}

#[derive(Debug, Deserialize)]
struct Finding {
    path: String,
    line: u32,
    column: u32,
    matched: String,
    preferred: String,
    rule: String,
    suggested: bool,
    fails: bool,
}

#[derive(Debug, Deserialize)]
struct Summary {
    failing: u32,
    findings: u32,
}

/// `check`'s answer.
#[derive(Debug, Deserialize)]
struct Report {
    findings: Vec<Finding>,
    summary: Summary,
}

#[derive(Debug, Deserialize)]
struct Operation {
    id: String,
    kind: String,
    status: String,
    actor: Actor,
}

/// `context_log`'s answer.
#[derive(Debug, Deserialize)]
struct Log {
    operations: Vec<Operation>,
}

#[tokio::test]
async fn the_rust_sdk_client_lists_exactly_the_agents_tools() {
    let repo = TestEnv::new();
    let client = connect(&repo).await;
    let server = client.peer_info().unwrap();
    assert_eq!(
        server.server_info.as_ref().map(|i| i.name.as_str()),
        Some("kapi")
    );
    let tools = timely("tools/list", client.list_all_tools()).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "apply_edits",
            "check",
            "compile_context",
            "context_here",
            "context_log",
            "context_note",
            "context_search",
            "context_session_summary",
            "verify_claim",
            "verify_context",
        ]
    );
    // A person's verbs are no tool's: keeping, dropping, widening,
    // resetting, importing stay with the CLI.
    for verb in ["keep", "drop", "choose", "widen", "reset", "import"] {
        assert_eq!(
            names.iter().find(|n| n.split('_').any(|w| w == verb)),
            None,
            "{verb}"
        );
    }
    // Every tool says what it takes, and takes nothing else.
    for tool in &tools {
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
        assert_eq!(
            tool.input_schema.get("additionalProperties"),
            Some(&json!(false)),
            "{}",
            tool.name
        );
    }
    timely("close", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn a_note_through_the_rust_sdk_reads_as_the_clients_in_the_log_and_in_typed_results() {
    let repo = TestEnv::new();
    repo.write("docs/guide.md", "Quick cast streams video.\n");
    let client = connect(&repo).await;

    let noted: Noted = typed(
        &client,
        "context_note",
        json!({"term": "Quickcast", "instead_of": ["Quick cast"], "quote": "Quick cast",
               "note": "the product's name is one word"}),
    )
    .await;
    let session = noted.session.clone();
    assert_eq!(session.len(), "mcp-".len() + 14, "{session}");
    assert_eq!(&session[..4], "mcp-");
    assert_eq!(
        noted.recorded.actor,
        Actor {
            kind: "agent".into(),
            name: CLIENT.into(),
            session: session.clone(),
        }
    );
    assert_eq!(noted.recorded.kind, "context.observe");
    assert_eq!(noted.recorded.subject.what, "term");
    assert_eq!(noted.recorded.subject.term, "Quickcast");
    assert_eq!(
        noted.recorded.subject.avoid,
        ["Quick cast", "Quick-cast", "QuickCast"]
    );
    assert_eq!(noted.recorded.evidence, [json!({"quote": "Quick cast"})]);
    let id = noted.recorded.id.clone();

    let here: Here = typed(&client, "context_here", json!({"path": "docs/guide.md"})).await;
    assert_eq!(here.path, "docs/guide.md");
    assert_eq!(
        (here.rules.len(), here.notes.len(), here.elsewhere.len()),
        (0, 0, 0)
    );
    let [suggestion] = here.suggestions.as_slice() else {
        panic!("one suggestion: {:?}", here.suggestions)
    };
    assert_eq!(
        (
            suggestion.id.as_str(),
            suggestion.term.as_str(),
            suggestion.status.as_str()
        ),
        (id.as_str(), "Quickcast", "suggested")
    );

    // A suggestion advises: a finding, not a failure.
    let report: Report = typed(&client, "check", json!({"paths": ["docs/guide.md"]})).await;
    assert_eq!((report.summary.failing, report.summary.findings), (0, 1));
    let [finding] = report.findings.as_slice() else {
        panic!("one finding: {:?}", report.findings)
    };
    assert_eq!(
        (
            finding.path.as_str(),
            finding.line,
            finding.column,
            finding.matched.as_str(),
            finding.preferred.as_str(),
            finding.rule.as_str(),
            finding.suggested,
            finding.fails
        ),
        (
            "docs/guide.md",
            1,
            1,
            "Quick cast",
            "Quickcast",
            id.as_str(),
            true,
            false
        )
    );

    let log: Log = typed(&client, "context_log", json!({"session": "this"})).await;
    let [op] = log.operations.as_slice() else {
        panic!("one operation: {:?}", log.operations)
    };
    assert_eq!(
        (op.id.as_str(), op.kind.as_str(), op.status.as_str()),
        (id.as_str(), "observe", "suggested")
    );
    assert_eq!(op.actor.name, CLIENT);
    timely("close", client.cancel()).await.unwrap();

    // The CLI reads it as this client's, in the server's session, whatever
    // the server's environment said.
    let log = repo.kapi(&["context", "log"]).ok();
    assert_eq!(
        log.stdout,
        format!(
            "{} observe   suggested   \"Quickcast\", not \"Quick cast\", \"Quick-cast\", \"QuickCast\" · agent {CLIENT} [{}] · seen in 1 session\n",
            &id[..10],
            &session[..8]
        )
    );
}

#[tokio::test]
async fn the_rust_sdk_client_is_refused_an_actor_an_unknown_tool_and_a_wrong_type() {
    let repo = TestEnv::new();
    let client = connect(&repo).await;

    // Naming who acts: a tool error naming the rule, nothing written.
    for field in ["actor", "session", "kind"] {
        let refused = call(
            &client,
            "context_note",
            json!({"text": "Releases ship on Tuesdays", "quote": "Tuesdays", field: "ada@example.com"}),
        )
        .await
        .unwrap();
        let text = refusal_text(&refused);
        let (rule, session) = text.rsplit_once(" (").unwrap();
        assert_eq!(
            rule,
            format!(
                "refusing `{field}`: the server names who acts, no tool takes an actor, a session or a kind; the agent is the client's own name from initialize and the session is this server's"
            )
        );
        assert_eq!(&session[..4], "mcp-", "{text}");
    }
    // A person's verb is no tool: a protocol error.
    match call(&client, "keep", json!({"id": "0ty5"})).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(
                (e.code, e.message.as_ref()),
                (ErrorCode::INVALID_PARAMS, "tool not found")
            );
        }
        other => panic!("keep is no tool: {other:?}"),
    }
    // A wrong type, an unknown argument, arguments over the bound: tool
    // errors naming what is wrong.
    let wrong = call(&client, "check", json!({"paths": 5})).await.unwrap();
    assert_eq!(
        refusal_text(&wrong),
        "argument `paths` of check takes an array of strings, not 5"
    );
    let unknown = call(&client, "context_log", json!({"colour": "red"}))
        .await
        .unwrap();
    assert_eq!(
        refusal_text(&unknown),
        "unknown argument `colour` for context_log; it takes: generation, kind, session, since, status"
    );
    let text = "a".repeat(70 * 1024);
    let arguments = json!({"text": text, "quote": "a"});
    let size = arguments.to_string().len();
    let over = call(&client, "context_note", arguments).await.unwrap();
    assert_eq!(
        refusal_text(&over),
        format!("the arguments have {size} bytes; a call's arguments have at most 65536")
    );

    // Still serving; nothing was written.
    let log: Log = typed(&client, "context_log", json!({})).await;
    assert_eq!(log.operations.len(), 0);
    timely("close", client.cancel()).await.unwrap();
    assert_eq!(repo.log(), Vec::<Value>::new());
}
