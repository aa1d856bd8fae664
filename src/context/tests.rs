//! The use cases called in process, as a hook or a server calls them: no
//! binary, the environment pinned by a [`FixedEnv`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::check::{CheckRequest, check};
use super::log::{Filter, query};
use super::{
    FixedEnv, NoteRequest, NoteWhat, Noted, ReviewRequest, Session, at_path, note, pending, review,
};
use crate::ops::Status;
use crate::ops::record::{ActorKind, Kind};

/// 2026-11-30T09:00:00Z.
const NOW: u64 = 1_796_029_200_000;

struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["config", "user.email", "ada@example.com"],
            &["config", "user.name", "Ada"],
        ] {
            crate::git::tests::sh(dir.path(), args);
        }
        Repo { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The agent `claude` in session `s1`.
    fn agent(&self, env: FixedEnv) -> Session {
        let env = env
            .with_var("KAPI_AGENT", "claude")
            .with_var("KAPI_SESSION", "s1");
        Session::open(Arc::new(env), self.path()).unwrap()
    }

    /// The person of the repository's git identity.
    fn person(&self) -> Session {
        Session::open(Arc::new(FixedEnv::new(NOW + 60_000, 99)), self.path()).unwrap()
    }
}

fn term(term: &str, instead_of: &str, path: &str) -> NoteRequest {
    NoteRequest {
        what: NoteWhat::Term {
            term: term.into(),
            instead_of: vec![instead_of.into()],
        },
        path: Some(path.into()),
        quote: None,
        unit: None,
        point: Vec::new(),
        valid_from: None,
        valid_to: None,
        note: None,
    }
}

#[test]
fn a_note_reads_back_through_the_log_query() {
    let repo = Repo::new();
    let agent = repo.agent(FixedEnv::new(NOW, 7));
    let Noted {
        record, refreshed, ..
    } = note(&agent, term("Quickcast", "Quick cast", "docs/intro.md")).unwrap();
    assert_eq!(record.actor.kind, ActorKind::Agent);
    // A suggestion changes nothing in force.
    assert!(refreshed.is_empty());

    let ledger = agent.ledger().unwrap();
    let all = query(&ledger, &Filter::default());
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].record.id, record.id);
    assert_eq!(all[0].state.map(|s| s.status), Some(Status::Suggested));
    let json = serde_json::to_value(all[0]).unwrap();
    assert_eq!(json["short"], record.short());
    assert_eq!(json["status"], "suggested");
    assert_eq!(json["ignored"], serde_json::Value::Null);

    // `this` session and `you` resolve from the call's environment.
    let mine = Filter {
        session: Some("this".into()),
        actor: Some("you".into()),
        ..Filter::default()
    }
    .resolve(&agent)
    .unwrap();
    assert_eq!(mine.session.as_deref(), Some("s1"));
    assert_eq!(query(&ledger, &mine).len(), 1);
    let kept = Filter {
        kind: Some(Kind::Keep),
        ..Filter::default()
    };
    assert!(query(&ledger, &kept).is_empty());
    // Without KAPI_SESSION, `this` is a usage error.
    let person = repo.person();
    let err = Filter {
        session: Some("this".into()),
        ..Filter::default()
    }
    .resolve(&person)
    .unwrap_err();
    assert!(err.to_string().contains("KAPI_SESSION"), "{err}");
}

#[test]
fn the_pending_queue_empties_when_a_person_decides() {
    let repo = Repo::new();
    // Only the rules files that exist are refreshed.
    repo.write("AGENTS.md", "# Agents\n");
    let agent = repo.agent(FixedEnv::new(NOW, 7));
    let noted = note(&agent, term("Quickcast", "Quick cast", "docs/intro.md")).unwrap();

    let waiting = pending(&agent.ledger().unwrap());
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].id, noted.record.id);
    assert_eq!(waiting[0].status, Status::Suggested);
    assert!(
        waiting[0]
            .subject
            .starts_with("\"Quickcast\", not \"Quick cast\""),
        "{}",
        waiting[0].subject
    );

    // Only a person decides.
    let refused = review(
        &agent,
        ReviewRequest {
            keep: vec![noted.record.short().into()],
            ..ReviewRequest::default()
        },
    );
    assert!(matches!(refused, Err(super::ContextError::Policy(_))));

    let person = repo.person();
    let reviewed = review(
        &person,
        ReviewRequest {
            keep: vec![noted.record.short().into()],
            ..ReviewRequest::default()
        },
    )
    .unwrap();
    assert_eq!(reviewed.recorded.len(), 1);
    assert_eq!(reviewed.recorded[0].kind, Kind::Keep);
    // What is in force changed: the rules files say so.
    let names: Vec<String> = reviewed
        .refreshed
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["AGENTS.md"]);
    assert!(!repo.path().join("CLAUDE.md").exists());
    let agents = std::fs::read_to_string(repo.path().join("AGENTS.md")).unwrap();
    assert!(agents.contains("Quickcast"), "{agents}");
    // Nothing awaits a decision; the rule kept is listed as in force.
    let digest = pending(&person.ledger().unwrap());
    assert!(
        digest.iter().all(|p| !p.awaiting && p.droppable),
        "{digest:?}"
    );
    assert_eq!(digest.len(), 1);

    assert!(
        at_path(&person, "docs/intro.md", None).is_err(),
        "not in the work tree"
    );
    repo.write("docs/intro.md", "Open Quickcast.\n");
    let here = at_path(&person, "docs/intro.md", None).unwrap();
    assert_eq!(here.here.rules.len(), 1);
    assert_eq!(here.to_json()["rules"][0]["use"], "Quickcast");
}

#[test]
fn every_call_reads_the_clock_and_randomness_afresh() {
    let repo = Repo::new();
    let env = Arc::new(
        FixedEnv::new(NOW, 7)
            .with_var("KAPI_AGENT", "claude")
            .with_var("KAPI_SESSION", "s1"),
    );
    let session = Session::open(env.clone(), repo.path()).unwrap();
    let first = note(&session, term("Quickcast", "Quick cast", "a.md")).unwrap();
    env.advance(3_600_000);
    let second = note(&session, term("Flowkit", "Flow kit", "a.md")).unwrap();
    assert!(second.record.id > first.record.id);
    assert_eq!(first.record.at, "2026-11-30T09:00:00.000Z");
    assert_eq!(second.record.at, "2026-11-30T10:00:00.000Z");
    // Same instant, same session: still two distinct ids.
    let third = note(&session, term("Supabase", "Supa base", "a.md")).unwrap();
    assert_ne!(third.record.id, second.record.id);
}

#[test]
fn a_check_in_process_fails_on_a_kept_rule_and_records_usage() {
    let repo = Repo::new();
    repo.write("docs/intro.md", "Open Quick cast, then Quickcast.\n");
    let agent = repo.agent(FixedEnv::new(NOW, 7));
    let noted = note(&agent, term("Quickcast", "Quick cast", "docs/intro.md")).unwrap();
    let person = repo.person();
    review(
        &person,
        ReviewRequest {
            keep: vec![noted.record.short().into()],
            ..ReviewRequest::default()
        },
    )
    .unwrap();

    let request = CheckRequest {
        cwd: repo.path().to_path_buf(),
        record_usage: true,
        ..CheckRequest::default()
    };
    let report = check(Some(&person), &request).unwrap();
    assert!(report.failed());
    assert_eq!(report.outcome.findings.len(), 1);
    // The whole project was checked: one usage signal, recorded as the checker.
    assert_eq!(report.signals, 1);
    let ledger = person.ledger().unwrap();
    let signal = ledger
        .records()
        .iter()
        .find(|r| r.kind == Kind::Signal)
        .unwrap();
    assert_eq!(signal.actor, super::check::checker());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["summary"]["failing"], 1);

    // Unchanged counts record nothing the second time.
    assert_eq!(check(Some(&person), &request).unwrap().signals, 0);
}
