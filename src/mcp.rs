//! `kapi mcp`: the context tools for coding agents, as a Model Context
//! Protocol server over stdio, on the official Rust SDK (`rmcp`).
//!
//! The server names who acts, never the client: no tool takes an actor.
//! The kind is agent, the name is the client's own `clientInfo.name` from
//! `initialize`, and the session is minted once per server process
//! (`mcp-<id>`), so one run's operations read together (`kapi context log
//! --session`) and a person can review or reset them together. Every
//! write goes through the library's one door ([`Session::record`], by way
//! of the use cases); stdout carries only the protocol, logs go to stderr.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::schemars::JsonSchema;
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::check::format::json::Document;
use crate::context::changeset::{ChangeSet, apply_change_set};
use crate::context::check::{CheckRequest, check};
use crate::context::fix::{FixMode, fix};
use crate::context::log::{Arrivals, Filter, listing, query};
use crate::context::outcomes::outcomes;
use crate::context::search::search;
use crate::context::{
    Call, ContextError, Edit, Env, NoteRequest, NoteWhat, ProcessEnv, Project, Session,
    apply_edits, at_path, note,
};
use crate::ops::record::{Actor, ActorKind};
use crate::ops::{Kind, Status};

/// The arguments of one call, serialized, may be at most this long: what
/// one note or query needs, with room; the door bounds each field again.
pub const MAX_ARGUMENTS: usize = 64 * 1024;

/// Argument names that would say who acts. A tool that does not define
/// one of them as its own filter refuses it, naming the rule.
const IDENTITY: [&str; 6] = ["actor", "session", "kind", "agent", "actor_kind", "person"];

thread_local! {
    /// The project a server on this thread keeps open between calls, by
    /// the directory it serves. Every call runs on the runtime's one thread
    /// ([`serve`]); a repository handle is not shared across threads.
    static OPENED: RefCell<Option<(PathBuf, Rc<Project>)>> = const { RefCell::new(None) };
}

/// The server: where it runs, its session, and the tools.
#[derive(Clone)]
pub struct Server {
    cwd: PathBuf,
    session: String,
    env: Arc<ProcessEnv>,
    tool_router: ToolRouter<Self>,
}

/// `context_note`: exactly one of `term`, `text`, `from`/`to` or
/// `withdraw`, with evidence (`path` or `quote`) where a rule is stated.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct NoteArgs {
    /// A term rule: the form to use (with `instead_of`).
    #[serde(default)]
    pub term: Option<String>,
    /// A term rule: the forms named instead of `term`.
    #[serde(default)]
    pub instead_of: Vec<String>,
    /// A note in prose: a fact about the project.
    #[serde(default)]
    pub text: Option<String>,
    /// A content-memory pair: the phrase (with `target`, its rendering
    /// kept, e.g. at a locale's point).
    #[serde(default)]
    pub pair: Option<String>,
    /// A content-memory pair: the rendering kept for `pair`.
    #[serde(default)]
    pub target: Option<String>,
    /// A person's correction: the wording before (with `to`).
    #[serde(default)]
    pub from: Option<String>,
    /// A person's correction: the wording after (with `from`).
    #[serde(default)]
    pub to: Option<String>,
    /// With a correction: also suggest the term rule it implies.
    #[serde(default)]
    pub suggest: bool,
    /// Take back one of this session's own suggestions (an id or prefix).
    #[serde(default)]
    pub withdraw: Option<String>,
    /// Evidence: the file it was seen in (relative to the work tree).
    #[serde(default)]
    pub path: Option<String>,
    /// Evidence: the text quoted.
    #[serde(default)]
    pub quote: Option<String>,
    /// Evidence: the unit within the file (a heading, a key).
    #[serde(default)]
    pub unit: Option<String>,
    /// `axis=value` pairs narrowing the evidence's point.
    #[serde(default)]
    pub point: Vec<String>,
    /// When the rule starts to hold (RFC 3339 or a date).
    #[serde(default)]
    pub valid_from: Option<String>,
    /// When the rule stops holding (RFC 3339 or a date).
    #[serde(default)]
    pub valid_to: Option<String>,
    /// Why, in a sentence.
    #[serde(default)]
    pub note: Option<String>,
}

/// `context_log`: every filter narrows.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct LogArgs {
    /// Only subjects with this status (suggested, established, ...).
    #[serde(default)]
    pub status: Option<String>,
    /// Only operations of this kind (observe, correct, keep, ...).
    #[serde(default)]
    pub kind: Option<String>,
    /// Only what this session recorded; `this`: this server's session.
    #[serde(default)]
    pub session: Option<String>,
    /// Only what arrived in this clone's log after this arrival position
    /// (`position` of an earlier answer; 0: everything), in arrival order;
    /// the answer then carries `position`, `generation` and `restarted`.
    #[serde(default)]
    pub since: Option<u64>,
    /// The generation of `since` (the `generation` of the answer it came
    /// from): a position of another generation lists everything again.
    #[serde(default)]
    pub generation: Option<String>,
}

/// `context_here`: what applies at a path.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct HereArgs {
    /// A file or folder of the work tree.
    pub path: String,
    /// At most this many items in each list (rules, notes, suggestions,
    /// elsewhere); default 50, at most 1000. What is left out is counted
    /// in `omitted`.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `context_here` lists at most this many items in each list unless the
/// call asks otherwise: an answer an agent's context can hold (Claude Code
/// warns past 10,000 tokens of tool output and cuts at 25,000).
pub const HERE_LIMIT: usize = 50;

/// The most a call may ask for.
pub const HERE_LIMIT_MAX: usize = 1000;

/// `context_search`: rules and notes that mention a text.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// The text to look for (case-insensitive).
    pub text: String,
}

/// `check`: prose against the rules in force.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct CheckArgs {
    /// Files or folders to check; none: the whole project.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Rewrite each avoided form of an established rule to its preferred
    /// form in those files, in prose only, all files or none (as `kapi
    /// check --fix`); the findings are then what remains.
    #[serde(default)]
    pub fix: bool,
    /// Only say what `fix` would write, as a unified diff; nothing is
    /// written.
    #[serde(default)]
    pub diff: bool,
}

/// `compile_context`: a bounded context from the decision records, as
/// `kapi compile-context` (the vault kapi.toml names).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct CompileArgs {
    /// Explicit targets: note ids (D-001), evidence ids (E-001) or note paths.
    #[serde(default)]
    pub targets: Vec<String>,
    /// A query ranking the notes.
    #[serde(default)]
    pub query: Option<String>,
    /// `substring` (default), `bm25` or `hybrid` (BM25 plus typed-graph proximity).
    #[serde(default)]
    pub ranking: Option<String>,
    /// At most this many documents (default 8).
    #[serde(default)]
    pub max_docs: Option<usize>,
    /// At most this many bytes in all (default 32768).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// The evaluation day, YYYY-MM-DD (default: today in UTC).
    #[serde(default)]
    pub today: Option<String>,
    /// Permit every label up to this one (public, internal, confidential, restricted).
    #[serde(default)]
    pub max_sensitivity: Option<String>,
}

/// `verify_context`: whether a compiled context in the work tree is
/// current, stale or refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct VerifyArgs {
    /// The compiled context's file, in the work tree.
    pub artifact: String,
    /// The evaluation day, YYYY-MM-DD (default: today in UTC).
    #[serde(default)]
    pub today: Option<String>,
    /// Permit every label up to this one (public, internal, confidential, restricted).
    #[serde(default)]
    pub max_sensitivity: Option<String>,
}

/// `verify_claim`: a claim's quotes against its capture's bytes.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct ClaimArgs {
    /// The claim: its id (C-001) or its path relative to the vault.
    pub claim: String,
    /// The evaluation day, YYYY-MM-DD (default: today in UTC).
    #[serde(default)]
    pub today: Option<String>,
    /// Permit every label up to this one; claims are always restricted,
    /// so a claim is found only with `restricted`.
    #[serde(default)]
    pub max_sensitivity: Option<String>,
}

/// One edit of `apply_edits`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct EditArg {
    /// The file, relative to the work tree (it must exist).
    pub path: String,
    /// The text to replace, as the file holds it, exactly once.
    pub old: String,
    /// The replacement.
    pub new: String,
}

/// `apply_edits`: edits applied all or none.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct ApplyArgs {
    /// The edits, applied in order (an edit sees the ones before it in
    /// the same file); at most 64.
    pub edits: Vec<EditArg>,
    /// Edits of rules in force, as a change set's `edits` (`kapi apply`):
    /// only a person edits a rule, so an agent's call that carries any is
    /// refused before anything is written; record a note instead.
    #[serde(default)]
    pub rules: Vec<Value>,
}

/// `context_session_summary`: takes nothing; it reads this server's session.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct SummaryArgs {}

/// A tool's answer: a short text, and the structured document.
fn answer(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A tool error: the call is refused or failed; the message says why.
fn refusal(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

fn failed(e: impl std::fmt::Display) -> CallToolResult {
    refusal(e.to_string())
}

#[tool_router(router = tool_router)]
impl Server {
    /// A server in `cwd`, its session minted now.
    pub fn new(cwd: &Path) -> Self {
        let env = Arc::new(ProcessEnv::default());
        let now = env.now_ms().unwrap_or_else(|_| env.wall_ms());
        let session = format!(
            "mcp-{:x}{:06x}",
            now / 1000,
            env.random() as u32 & 0xff_ffff
        );
        Self {
            cwd: cwd.to_path_buf(),
            session,
            env,
            tool_router: Self::tool_router(),
        }
    }

    /// This server's session id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// The agent acting in this process: the client's own name.
    fn actor(&self, peer: &Peer<RoleServer>) -> Result<Actor, CallToolResult> {
        let info = peer.peer_info().ok_or_else(|| {
            refusal("the client has not introduced itself: send initialize (with clientInfo.name) first; kapi names the agent by it")
        })?;
        let name = crate::ops::actor::agent_name(&info.client_info.name).map_err(refusal)?;
        Ok(Actor {
            kind: ActorKind::Agent,
            name: name.into(),
            session: Some(self.session.clone().into()),
        })
    }

    /// A session for one call: the project this server keeps open (see
    /// [`OPENED`]) and the agent acting.
    fn open(&self, peer: &Peer<RoleServer>) -> Result<Session, CallToolResult> {
        let actor = self.actor(peer)?;
        // A clock kapi cannot read is refused before anything else.
        self.env.now_ms().map_err(failed)?;
        let project = self.project().map_err(failed)?;
        let call = Call {
            cwd: self.cwd.clone(),
            actor,
            env: self.env.clone(),
        };
        Ok(Session::new(project, call))
    }

    /// The project at `cwd`, opened on the first call and kept while the
    /// files it was opened from stand ([`Project::is_current`]); with it
    /// the folds it read, served while the logs' tips stay the same.
    fn project(&self) -> Result<Rc<Project>, ContextError> {
        OPENED.with_borrow_mut(|slot| {
            if let Some((cwd, project)) = slot.as_ref()
                && *cwd == self.cwd
                && project.is_current()
            {
                return Ok(Rc::clone(project));
            }
            *slot = None;
            let project = Rc::new(Project::open(&*self.env, &self.cwd)?);
            *slot = Some((self.cwd.clone(), Rc::clone(&project)));
            Ok(project)
        })
    }

    /// Record what the agent noticed: a term rule (`term`, `instead_of`), a
    /// note in prose (`text`), a person's correction (`from`, `to`), or the
    /// withdrawal of this session's own suggestion (`withdraw`). A rule
    /// needs evidence: `path` or `quote`. It stands as a suggestion until a
    /// person keeps it.
    #[tool(name = "context_note")]
    fn context_note(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<NoteArgs>,
    ) -> CallToolResult {
        let pair = match (args.pair, args.target) {
            (Some(source), Some(target)) => Some(NoteWhat::Pair { source, target }),
            (None, None) => None,
            _ => {
                return refusal(
                    "a pair gives both `pair` (the phrase) and `target` (its rendering)",
                );
            }
        };
        let what = match (
            args.term,
            args.text,
            args.from,
            args.to,
            args.withdraw,
            pair,
        ) {
            (Some(term), None, None, None, None, None) => NoteWhat::Term {
                term,
                instead_of: args.instead_of,
            },
            (None, Some(text), None, None, None, None) => NoteWhat::Prose { text },
            (None, None, Some(from), Some(to), None, None) => NoteWhat::Correction {
                from,
                to,
                suggest: args.suggest,
            },
            (None, None, None, None, Some(target), None) => NoteWhat::Withdraw { target },
            (None, None, None, None, None, Some(pair)) => pair,
            _ => {
                return refusal(
                    "give exactly one of: `term` (a term rule, with `instead_of`), `text` (a note), `pair` and `target` (a content-memory pair), `from` and `to` (a correction), `withdraw` (an id)",
                );
            }
        };
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let request = NoteRequest {
            what,
            path: args.path,
            quote: args.quote,
            unit: args.unit,
            point: args.point,
            valid_from: args.valid_from,
            valid_to: args.valid_to,
            note: args.note,
        };
        match note(&session, request) {
            Ok(noted) => {
                let verb = if noted.suggests() {
                    "suggested"
                } else {
                    "recorded"
                };
                let text = format!(
                    "{verb} #{} {} (session {})",
                    noted.record.short(),
                    noted.describe(),
                    self.session
                );
                let mut doc = json!({"recorded": noted.record, "session": self.session});
                if let Some(e) = noted.refresh_error {
                    doc["refresh_error"] = json!(e.to_string());
                }
                answer(text, doc)
            }
            Err(e) => failed(e),
        }
    }

    /// The operations of the log with their state, filtered by `status`,
    /// `kind` (of operation) and `session` (`this`: this server's session),
    /// as `kapi context log --json` gives them.
    #[tool(name = "context_log")]
    fn context_log(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<LogArgs>,
    ) -> CallToolResult {
        let status = match args.status.as_deref().map(|s| {
            Status::parse(s).ok_or_else(|| {
                let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                format!("unknown status `{s}`; one of {}", all.join(", "))
            })
        }) {
            Some(Err(e)) => return refusal(e),
            Some(Ok(s)) => Some(s),
            None => None,
        };
        let kind = match args.kind.as_deref().map(|k| {
            Kind::parse(k).ok_or_else(|| {
                let all: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown kind `{k}`; one of {}", all.join(", "))
            })
        }) {
            Some(Err(e)) => return refusal(e),
            Some(Ok(k)) => Some(k),
            None => None,
        };
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let filter = Filter {
            status,
            kind,
            session: match args.session {
                Some(s) if s == "this" => Some(self.session.clone()),
                other => other,
            },
            actor: None,
        };
        if let Some(since) = args.since {
            let arrivals = match Arrivals::read(&session, since, args.generation.as_deref()) {
                Ok(a) => a,
                Err(e) => return failed(e),
            };
            let at = &arrivals.since;
            let entries = arrivals.entries(&filter);
            let text = format!(
                "{} operation(s) arrived after position {since}{}; the position is now {}",
                entries.len(),
                if at.restarted {
                    " (not this log's: listed from 0)"
                } else {
                    ""
                },
                at.position
            );
            return answer(text, arrivals.document(&entries));
        }
        // As `kapi context log` reads it: by status the reader's view, by
        // a kind decisions hold the view with the decisions, else the
        // whole ledger.
        let (listed, unreadable) = match listing(&session, &filter, None) {
            Ok(l) => l,
            Err(e) => return failed(e),
        };
        let entries: Vec<Value> = query(&listed, &filter)
            .into_iter()
            .map(|e| e.to_json())
            .collect();
        let mut text = format!("{} operation(s)", entries.len());
        let mut doc = json!({"operations": entries});
        if unreadable > 0 {
            text.push_str(&format!(
                "; {unreadable} stored operation(s) could not be read and were skipped (`kapi store doctor` names them)"
            ));
            doc["unreadable"] = json!(unreadable);
        }
        answer(text, doc)
    }

    /// What applies at a file or folder of the work tree: the rules and
    /// notes in force there, the suggestions, and the rules held elsewhere
    /// but not there (as `kapi context <path> --json`).
    #[tool(name = "context_here")]
    fn context_here(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<HereArgs>,
    ) -> CallToolResult {
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let limit = args.limit.unwrap_or(HERE_LIMIT);
        if limit == 0 || limit > HERE_LIMIT_MAX {
            return refusal(format!(
                "limit {limit}: give 1 to {HERE_LIMIT_MAX} (items in each list)"
            ));
        }
        match at_path(&session, &args.path, None) {
            Ok(mut at) => {
                let h = &mut at.here;
                let text = format!(
                    "{}: {} rule(s), {} note(s), {} suggestion(s), {} held elsewhere",
                    at.path,
                    h.rules.len(),
                    h.notes.len(),
                    h.suggestions.len(),
                    h.elsewhere.len()
                );
                let mut omitted = serde_json::Map::new();
                for (name, list) in [
                    ("rules", &mut h.rules),
                    ("notes", &mut h.notes),
                    ("suggestions", &mut h.suggestions),
                    ("elsewhere", &mut h.elsewhere),
                    ("pairs", &mut h.pairs),
                ] {
                    if list.len() > limit {
                        omitted.insert(name.into(), json!(list.len() - limit));
                        list.truncate(limit);
                    }
                }
                let mut doc = at.to_json();
                let text = if omitted.is_empty() {
                    text
                } else {
                    doc["omitted"] = Value::Object(omitted);
                    format!(
                        "{text}; {limit} of each listed, the rest counted in `omitted` (ask with a higher `limit`, or narrow with context_search)"
                    )
                };
                answer(text, doc)
            }
            Err(e) => failed(e),
        }
    }

    /// The rules and notes that mention a text, in the project and across
    /// the workspace (as `kapi context search --json`).
    #[tool(name = "context_search")]
    fn context_search(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<SearchArgs>,
    ) -> CallToolResult {
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        match search(&session, &args.text) {
            Ok(found) => {
                let text = format!(
                    "\"{}\": {} rule(s), {} note(s), {} workspace rule(s)",
                    found.text,
                    found.rules.len(),
                    found.notes.len(),
                    found.workspace.len()
                );
                match serde_json::to_value(&found) {
                    Ok(doc) => answer(text, doc),
                    Err(e) => failed(e),
                }
            }
            Err(e) => failed(e),
        }
    }

    /// Check files (or the whole project) against the rules in force;
    /// suggestions only advise. Findings as `kapi check --format json`.
    /// With `fix`, rewrite each avoided form of an established rule to its
    /// preferred form in prose (as `kapi check --fix`), then report what
    /// remains; with `diff`, only show what `fix` would write.
    #[tool(name = "check")]
    fn check(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<CheckArgs>,
    ) -> CallToolResult {
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let request = CheckRequest {
            cwd: self.cwd.clone(),
            paths: args.paths.into_iter().map(PathBuf::from).collect(),
            staged: false,
            extra_rules: Vec::new(),
            record_usage: false,
            as_of: None,
            stdin: None,
            to_fix: false,
            list_rules: false,
        };
        if args.fix || args.diff {
            return self.fix(&session, &request, args.fix, args.diff);
        }
        match check(Some(&session), &request) {
            Ok(report) => {
                let summary = report.outcome.summary();
                let text = format!(
                    "{} failing, {} finding(s) in all",
                    summary.failing,
                    report.outcome.findings.len()
                );
                match serde_json::to_value(&report) {
                    Ok(doc) => answer(text, doc),
                    Err(e) => failed(e),
                }
            }
            Err(e) => failed(e),
        }
    }

    /// Compile the decision records into a bounded context (as `kapi
    /// compile-context`): targets and/or a query, within max_docs and
    /// max_bytes; only permitted notes are read (public unless
    /// max_sensitivity says otherwise).
    #[tool(name = "compile_context")]
    fn compile_context(&self, Parameters(args): Parameters<CompileArgs>) -> CallToolResult {
        self.compile(args).unwrap_or_else(refusal)
    }

    /// Say whether a compiled context (a file of the work tree) is current,
    /// stale or refused (as `kapi verify-context`).
    #[tool(name = "verify_context")]
    fn verify_context(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<VerifyArgs>,
    ) -> CallToolResult {
        self.verify(&peer, args).unwrap_or_else(refusal)
    }

    /// Check a claim's quotes against the bytes of the capture it was
    /// taken from (as `kapi verify-claim`): `verified`, `failed` (a quote
    /// is not the capture's bytes between its anchors) or `refused` (not
    /// found in the permitted view, ambiguous, withheld). It checks the
    /// anchors, not whether the quotes support the claim.
    #[tool(name = "verify_claim")]
    fn verify_claim(&self, Parameters(args): Parameters<ClaimArgs>) -> CallToolResult {
        self.claim(args).unwrap_or_else(refusal)
    }

    /// Apply edits to files of the work tree, all or none (each replaces a
    /// text its file holds exactly once), and record an `applied` signal
    /// for each suggestion whose preferred form they write. Nothing is
    /// written outside the work tree, through a symbolic link or under
    /// `.git`.
    #[tool(name = "apply_edits")]
    fn apply_edits(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<ApplyArgs>,
    ) -> CallToolResult {
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let edits: Vec<Edit> = args
            .edits
            .into_iter()
            .map(|e| Edit {
                path: e.path,
                old: e.old,
                new: e.new,
            })
            .collect();
        if !args.rules.is_empty() {
            // A change set with rule edits, through the one policy: the
            // calling agent is refused before anything is read or written.
            if let Err(e) = session.permits(Kind::Edit) {
                return failed(e);
            }
            let doc = json!({ "edits": args.rules });
            let mut set = match ChangeSet::parse(doc.to_string().as_bytes()) {
                Ok(set) => set,
                Err(e) => return failed(e),
            };
            set.content = edits;
            return match apply_change_set(&session, set) {
                Ok(applied) => match serde_json::to_value(&applied) {
                    Ok(mut doc) => {
                        doc["session"] = json!(self.session);
                        let text = format!(
                            "recorded {}",
                            crate::wording::count(
                                applied.recorded.len(),
                                "operation",
                                "operations"
                            )
                        );
                        answer(text, doc)
                    }
                    Err(e) => failed(e),
                },
                Err(e) => failed(e),
            };
        }
        match apply_edits(&session, edits) {
            Ok(applied) => {
                let edits: usize = applied.files.iter().map(|f| f.edits).sum();
                let mut text = format!(
                    "applied {} to {}; {}",
                    crate::wording::count(edits, "edit", "edits"),
                    crate::wording::count(applied.files.len(), "file", "files"),
                    crate::wording::count(
                        applied.signals.len(),
                        "applied signal",
                        "applied signals"
                    ),
                );
                if let Some(e) = &applied.unrecorded {
                    text.push_str(&format!(" (not recorded: {e})"));
                }
                match serde_json::to_value(&applied) {
                    Ok(mut doc) => {
                        doc["session"] = json!(self.session);
                        answer(text, doc)
                    }
                    Err(e) => failed(e),
                }
            }
            Err(e) => failed(e),
        }
    }

    /// What this server's session recorded, what became of it, and what
    /// its checks caught (as `kapi context session <id> --json`).
    #[tool(name = "context_session_summary")]
    fn context_session_summary(
        &self,
        peer: Peer<RoleServer>,
        Parameters(_): Parameters<SummaryArgs>,
    ) -> CallToolResult {
        let session = match self.open(&peer) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let ledger = match session.ledger() {
            Ok(l) => l,
            Err(e) => return failed(e),
        };
        let of = outcomes(&ledger, &self.session);
        let text = format!(
            "session {}: recorded {}; caught {}, still failing {}",
            self.session,
            of.recorded.len(),
            of.caught.len(),
            of.open.len()
        );
        match serde_json::to_value(&of) {
            Ok(doc) => answer(text, json!({"session": self.session, "summary": doc})),
            Err(e) => failed(e),
        }
    }
}

impl Server {
    /// `check` with `fix` or `diff`: the fixes written (recorded in this
    /// server's session) or shown, and the findings that remain.
    fn fix(
        &self,
        session: &Session,
        request: &CheckRequest,
        write: bool,
        diff: bool,
    ) -> CallToolResult {
        if write && diff {
            return refusal(
                "`diff` shows what `fix` would write and writes nothing: give one of them",
            );
        }
        let mode = if write { FixMode::Write } else { FixMode::Diff };
        let fixed = match fix(Some(session), request, mode) {
            Ok(fixed) => fixed,
            Err(e) => return failed(e),
        };
        let outcome = &fixed.report.outcome;
        let doc = Document::of(outcome).with_fixed(fixed.fixed());
        let mut doc = match serde_json::to_value(&doc) {
            Ok(doc) => doc,
            Err(e) => return failed(e),
        };
        let fixes = crate::wording::count(fixed.fixes(), "finding", "findings");
        let files = fixed.files.iter().filter(|f| f.fixed.fixes > 0).count();
        let files = crate::wording::count(files, "file", "files");
        let text = if diff {
            doc["diff"] =
                json!(crate::check::format::diff::render(fixed.files.iter().map(
                    |f| (f.fixed.path.as_str(), f.before.as_str(), f.after.as_str())
                )));
            format!("would fix {fixes} in {files}; nothing was written")
        } else {
            let summary = outcome.summary();
            let mut text = format!(
                "fixed {fixes} in {files}; {} failing, {} in all remain",
                summary.failing,
                crate::wording::count(outcome.findings.len(), "finding", "findings"),
            );
            if let Some(applied) = &fixed.applied {
                doc["signals"] = json!(applied.signals);
                if let Some(e) = &applied.unrecorded {
                    doc["unrecorded"] = json!(e);
                    text.push_str(&format!(" (applied signals not recorded: {e})"));
                }
            }
            doc["session"] = json!(self.session);
            text
        };
        answer(text, doc)
    }

    /// The evaluation day and the vault a compile or verify call reads, as
    /// the command line resolves them (`--today`, `--max-sensitivity`; the
    /// vault is the project's).
    fn vault(
        &self,
        today: Option<&str>,
        max_sensitivity: Option<&str>,
    ) -> Result<
        (
            crate::compile::request::Resolved,
            crate::compile::request::VaultChoice,
        ),
        String,
    > {
        let request = crate::compile::Request {
            cwd: &self.cwd,
            today,
            root: None,
            max_sensitivity,
            allow: None,
        };
        let resolved = request
            .resolve(|| self.env.now_ms())
            .map_err(|e| e.to_string())?;
        let vault = request.vault(&resolved).map_err(|e| e.to_string())?;
        Ok((resolved, vault))
    }

    fn compile(&self, args: CompileArgs) -> Result<CallToolResult, String> {
        use crate::compile::{self, Options, Ranking, Recipe};
        let ranking = Ranking::requested(args.ranking.as_deref().unwrap_or("substring"))
            .map_err(|e| e.to_string())?;
        let (resolved, vault) =
            self.vault(args.today.as_deref(), args.max_sensitivity.as_deref())?;
        let options = Options {
            recipe: Recipe {
                targets: args.targets,
                query: args.query.filter(|q| !q.trim().is_empty()),
                ranking,
                max_docs: args.max_docs.unwrap_or(8),
                max_bytes: args.max_bytes.unwrap_or(32768),
                agent: None,
            },
            today: resolved.today,
            grant: vault.grant,
            scope: Default::default(),
            layout: vault.layout,
        };
        let compiled =
            compile::compile_context(&vault.root, &options).map_err(|e| e.to_string())?;
        let bytes = compile::serialize_compiled(&compiled);
        let doc: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        let text = if compiled.refused() {
            "refused: see `refusal`".to_owned()
        } else {
            format!("compiled context, {} bytes", bytes.len())
        };
        Ok(answer(text, doc))
    }

    fn verify(&self, peer: &Peer<RoleServer>, args: VerifyArgs) -> Result<CallToolResult, String> {
        use crate::compile::artifacts;
        use crate::compile::verify::{Expected, VerifyOptions};
        let session = self.open(peer).map_err(|e| {
            e.content
                .first()
                .and_then(|c| c.as_text().map(|t| t.text.clone()))
                .unwrap_or_default()
        })?;
        // Only a file of the work tree is read.
        let rel =
            crate::context::work_tree_path(&session, &args.artifact).map_err(|e| e.to_string())?;
        let (resolved, vault) =
            self.vault(args.today.as_deref(), args.max_sensitivity.as_deref())?;
        let options = VerifyOptions {
            today: resolved.today,
            grant: vault.grant,
            expected: Expected::default(),
            scope: Default::default(),
            layout: vault.layout,
        };
        let verdict = artifacts::verify_file(&vault.root, &session.root.join(&rel), &options)
            .map_err(|e| e.to_string())?;
        let doc = verdict.to_json();
        let text = format!(
            "{}: {}",
            rel,
            doc.get("status")
                .and_then(Value::as_str)
                .unwrap_or("verified")
        );
        Ok(answer(text, doc))
    }

    fn claim(&self, args: ClaimArgs) -> Result<CallToolResult, String> {
        use crate::compile::verify_claim::verify_claim;
        let (_, vault) = self.vault(args.today.as_deref(), args.max_sensitivity.as_deref())?;
        let verdict = verify_claim(&vault.root, &args.claim, &vault.grant, &vault.layout)
            .map_err(|e| e.to_string())?;
        let text = format!("{}: {}", args.claim, verdict.status.as_str());
        Ok(answer(text, verdict.value))
    }

    /// Refuse what no tool may carry: an argument naming who acts, any
    /// argument the tool does not define, arguments over the bound.
    fn screen(&self, request: &CallToolRequestParams) -> Option<CallToolResult> {
        let tool = self.tool_router.get(&request.name)?;
        let args = request.arguments.as_ref()?;
        let size = serde_json::to_string(args).map_or(usize::MAX, |s| s.len());
        if size > MAX_ARGUMENTS {
            return Some(refusal(format!(
                "the arguments have {size} bytes; a call's arguments have at most {MAX_ARGUMENTS}"
            )));
        }
        let defined = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let takes = |name: &str| defined.is_some_and(|p| p.contains_key(name));
        if let Some(name) = args
            .keys()
            .find(|k| IDENTITY.contains(&k.as_str()) && !takes(k))
        {
            return Some(refusal(format!(
                "refusing `{name}`: the server names who acts, no tool takes an actor, a session or a kind; the agent is the client's own name from initialize and the session is this server's ({})",
                self.session
            )));
        }
        if let Some(name) = args.keys().find(|k| !takes(k)) {
            let known: Vec<&str> = defined
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Some(refusal(format!(
                "unknown argument `{name}` for {}; it takes: {}",
                request.name,
                if known.is_empty() {
                    "nothing".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
        if let Some((name, value, schema)) = args.iter().find_map(|(name, value)| {
            let schema = defined?.get(name)?;
            (!fits(value, schema)).then_some((name, value, schema))
        }) {
            let mut given = value.to_string();
            if given.chars().count() > 60 {
                given = given.chars().take(57).chain("...".chars()).collect();
            }
            return Some(refusal(format!(
                "argument `{name}` of {} takes {}, not {given}",
                request.name,
                expected(schema)
            )));
        }
        None
    }
}

/// Whether an argument has a type its schema allows (`type`, `items`,
/// `minimum`): checked before the call, so a wrong type is refused naming
/// the argument, where deserializing the whole call would not name it.
fn fits(value: &Value, schema: &Value) -> bool {
    let given = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let allows = |t: &str| match &schema["type"] {
        Value::String(s) => s == t || (t == "integer" && s == "number"),
        Value::Array(all) => all
            .iter()
            .any(|s| s == t || (t == "integer" && s == "number")),
        _ => true,
    };
    let above_minimum = match (value.as_f64(), schema["minimum"].as_f64()) {
        (Some(v), Some(min)) => v >= min,
        _ => true,
    };
    let items_fit = match (value, schema.get("items")) {
        (Value::Array(items), Some(each)) => items.iter().all(|v| fits(v, each)),
        _ => true,
    };
    allows(given) && above_minimum && items_fit
}

/// What a schema takes, in words: `a string or null`, `an array of strings`.
fn expected(schema: &Value) -> String {
    let types: Vec<&str> = match &schema["type"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(all) => all.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let words: Vec<String> = types
        .iter()
        .map(|t| match *t {
            "array" => match schema["items"]["type"].as_str() {
                Some(each) => format!("an array of {each}s"),
                None => "an array".to_owned(),
            },
            "integer" if schema["minimum"].as_f64() == Some(0.0) => "a whole number".to_owned(),
            "integer" => "an integer".to_owned(),
            "object" => "an object".to_owned(),
            "null" => "null".to_owned(),
            other => format!("a {other}"),
        })
        .collect();
    if words.is_empty() {
        "anything".to_owned()
    } else {
        words.join(" or ")
    }
}

#[tool_handler(router = self.tool_router, name = "kapi", instructions = "kapi's context ledger: what applies where (context_here), notes and suggested term rules (context_note), checks (check). A person decides what becomes a rule.")]
impl ServerHandler for Server {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(refused) = self.screen(&request) {
            return Ok(refused.into());
        }
        let tcc = ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }
}

/// Serve over stdin/stdout until the client goes away, on one thread.
#[allow(clippy::print_stderr)]
pub fn serve(cwd: &Path) -> Result<(), ContextError> {
    // Refuse to start outside a repository: say so on stderr, not in the protocol.
    let probe = Session::open_as(
        Arc::new(ProcessEnv::default()),
        cwd,
        Actor {
            kind: ActorKind::Agent,
            name: "mcp".into(),
            session: None,
        },
    )?;
    drop(probe);
    let server = Server::new(cwd);
    eprintln!(
        "kapi mcp: serving {} as session {}",
        cwd.display(),
        server.session_id()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ContextError::Usage(format!("cannot start the server: {e}")))?;
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ContextError::Usage(format!("the client did not connect: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| ContextError::Usage(format!("the server stopped: {e}")))?;
        Ok::<(), ContextError>(())
    })?;
    runtime.shutdown_background();
    Ok(())
}
