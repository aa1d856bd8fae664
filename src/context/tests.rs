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
    assert_eq!(waiting[0].id, noted.record.op_id());
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

/// The checkpointed fold every reader uses answers as a fresh fold of the
/// log, whatever happened to the log since the checkpoint was written.
mod checkpoint {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::{NOW, Repo};
    use crate::context::checkpointed::Want;
    use crate::context::{FixedEnv, Session};
    use crate::ops::fold::{Ignored, Ledger, State};
    use crate::ops::id::OpId;
    use crate::ops::record::{Actor, ActorKind, Kind, Record, Signal, SignalSource, Subject};

    /// What happens to the log between two reads.
    #[derive(Debug, Clone)]
    enum Step {
        /// Operations minted after everything the log holds.
        Append(Vec<Gen>),
        /// Only check runs, as a hook appends them (content addresses 0-3).
        Checks(Vec<u8>),
        /// Operations from elsewhere, dated among those the log holds.
        Merge(Vec<Gen>, u16),
        /// A person's reset to before an operation the log holds.
        Reset(usize),
        /// `refs/kapi/ops` moved back one commit (rewritten by someone).
        Rewind,
        /// A checkpoint file damaged: the view, the base, the view with
        /// every decision, or the histories kept beside them.
        Damage(u8),
        /// kapi.toml types the market axis (nordics contains no and se),
        /// or leaves it untyped: scopes compare otherwise, so the fold
        /// answers otherwise; and settles by evidence or by keeps only
        /// (`[context] settle`): a merge signal establishes or does not.
        Config(bool, bool),
    }

    #[derive(Debug, Clone)]
    enum Gen {
        Term(u8, bool),
        /// A person's correction from one form to the next in a phrase,
        /// stating the rule it implies or not.
        Correct(u8, bool),
        Note,
        /// A content-memory pair: a phrase and its rendering.
        Pair(u8),
        Keep(usize),
        Drop(usize),
        Withdraw(usize),
        Usage(usize, u8),
        /// A merge signal for a suggestion: a person signal, unless the
        /// project keeps every rule by hand.
        Merge(usize),
        /// A check run, with a content address (0: none) that may repeat,
        /// as a hook's runs carry one.
        Check(u8),
    }

    fn operation() -> impl Strategy<Value = Gen> {
        prop_oneof![
            3 => (0u8..6, any::<bool>()).prop_map(|(a, p)| Gen::Term(a, p)),
            1 => (0u8..6, any::<bool>()).prop_map(|(a, r)| Gen::Correct(a, r)),
            1 => Just(Gen::Note),
            1 => (0u8..6).prop_map(Gen::Pair),
            2 => (0usize..64).prop_map(Gen::Keep),
            1 => (0usize..64).prop_map(Gen::Drop),
            1 => (0usize..64).prop_map(Gen::Withdraw),
            2 => (0usize..64, 0u8..4).prop_map(|(t, n)| Gen::Usage(t, n)),
            1 => (0usize..64).prop_map(Gen::Merge),
            2 => (0u8..4).prop_map(Gen::Check),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => proptest::collection::vec(operation(), 1..5).prop_map(Step::Append),
            2 => proptest::collection::vec(0u8..4, 1..3).prop_map(Step::Checks),
            2 => (proptest::collection::vec(operation(), 1..4), any::<u16>()).prop_map(|(g, at)| Step::Merge(g, at)),
            1 => (0usize..64).prop_map(Step::Reset),
            1 => Just(Step::Rewind),
            1 => (0u8..4).prop_map(Step::Damage),
            1 => (any::<bool>(), any::<bool>()).prop_map(|(t, k)| Step::Config(t, k)),
        ]
    }

    /// kapi.toml with the market axis typed or not, settling by evidence
    /// or by keeps only.
    fn config(typed: bool, keep_only: bool) -> String {
        let axes = "[axes.market]\nkind = \"enum\"\ncontains = { nordics = [\"no\", \"se\"] }\n";
        let settle = "[context]\nsettle = \"keep-only\"\n";
        format!(
            "project = \"p\"\n{}{}",
            if typed { axes } else { "" },
            if keep_only { settle } else { "" }
        )
    }

    /// Evidence that names a file: settling may establish what it backs.
    fn seen_in_a_file() -> crate::ops::slim::Slim<Vec<crate::ops::record::Evidence>> {
        vec![crate::ops::record::Evidence {
            path: Some("docs/a.md".into()),
            ..Default::default()
        }]
        .into()
    }

    fn record(g: &Gen, ms: u64, n: u64, log: &[Record]) -> Record {
        let id = OpId::mint(ms, u128::from(n) * 7919 + 13, None).unwrap();
        let (kind, who) = match g {
            Gen::Correct(..) => (Kind::Correct, ActorKind::Person),
            Gen::Term(_, true) | Gen::Keep(_) | Gen::Drop(_) => (
                if matches!(g, Gen::Keep(_)) {
                    Kind::Keep
                } else if matches!(g, Gen::Drop(_)) {
                    Kind::Drop
                } else {
                    Kind::Observe
                },
                ActorKind::Person,
            ),
            Gen::Term(_, false) | Gen::Note | Gen::Pair(_) => (Kind::Observe, ActorKind::Agent),
            Gen::Withdraw(_) => (Kind::Withdraw, ActorKind::Agent),
            Gen::Usage(..) | Gen::Merge(_) => (Kind::Signal, ActorKind::Tool),
            Gen::Check(_) => (Kind::Check, ActorKind::Tool),
        };
        let actor = Actor {
            kind: who,
            name: "x".into(),
            session: Some(format!("s{}", n % 3).into()),
        };
        let mut r = Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new("p", actor, kind)
        };
        let forms = [
            "Quickcast",
            "Quick cast",
            "Flowkit",
            "Flow kit",
            "QuickCast",
            "Nordkit",
            "Nord kit",
        ];
        let pick = |t: usize| {
            let subjects: Vec<&Record> = log.iter().filter(|r| r.subject.is_some()).collect();
            (!subjects.is_empty()).then(|| subjects[t % subjects.len()].id.clone())
        };
        match g {
            Gen::Term(a, _) => {
                r.subject = Some(Box::new(Subject::Term {
                    preferred: forms[*a as usize].into(),
                    avoid: vec![forms[*a as usize + 1].into()],
                }));
                // Seen in a file: settling may establish it.
                r.evidence = seen_in_a_file();
                // Rules at points that meet only when the axis is typed.
                if let Some(market) = ["nordics", "no", "se"].get((n % 4) as usize) {
                    r.scope.point.insert("market".into(), (*market).into());
                }
            }
            Gen::Correct(a, rule) => {
                let (to, from) = (forms[*a as usize], forms[*a as usize + 1]);
                r.correction = Some(Box::new(crate::ops::record::Correction {
                    from: format!("the {from} tool"),
                    to: format!("the {to} tool"),
                }));
                if *rule {
                    r.subject = Some(Box::new(Subject::Term {
                        preferred: to.into(),
                        avoid: vec![from.into()],
                    }));
                }
                r.evidence = seen_in_a_file();
            }
            Gen::Pair(a) => {
                r.subject = Some(Box::new(Subject::Pair {
                    source: forms[*a as usize].into(),
                    target: format!("{} (de)", forms[*a as usize + 1]),
                }));
            }
            Gen::Note => {
                r.subject = Some(Box::new(Subject::Note {
                    text: format!("note {n}"),
                }))
            }
            Gen::Keep(t) | Gen::Drop(t) | Gen::Withdraw(t) => r.target = pick(*t),
            Gen::Merge(t) => {
                r.target = pick(*t);
                r.signal = Some(Box::new(Signal {
                    source: SignalSource::Merge,
                    preferred: 1,
                    avoided: 0,
                    commit: Some(format!("{n:040x}")),
                    pr: None,
                    merger: None,
                }));
            }
            Gen::Usage(t, k) => {
                r.target = pick(*t);
                r.signal = Some(Box::new(Signal {
                    source: SignalSource::Usage,
                    preferred: u64::from(*k),
                    avoided: u64::from(3 - *k),
                    commit: None,
                    pr: None,
                    merger: None,
                }));
            }
            Gen::Check(address) => {
                r.check = Some(Box::new(crate::ops::record::CheckRun {
                    hook: "stop".into(),
                    files: vec!["a.md".into()],
                    failing: Vec::new(),
                    clean: true,
                }));
                r.address = (*address > 0).then(|| format!("run-{address}"));
            }
        }
        if r.kind.needs_target() && r.target.is_none() {
            r.kind = Kind::Observe;
            r.actor.kind = ActorKind::Agent;
            r.subject = Some(Box::new(Subject::Note {
                text: format!("nothing to act on {n}"),
            }));
        }
        r
    }

    type Answer = (Vec<(String, Option<State>)>, Vec<Ignored>);

    fn answer(ledger: &Ledger) -> Answer {
        let states = ledger
            .iter()
            .map(|(r, s)| (r.id.to_string(), s.cloned()))
            .collect();
        let mut ignored = ledger.ignored.clone();
        ignored.sort_by(|a, b| a.id.cmp(&b.id).then(a.reason.cmp(&b.reason)));
        (states, ignored)
    }

    /// What a reader of the view asks of a ledger: the digest's items, the
    /// operations each status lists (as `context log --json` prints them),
    /// and the imported rules that disagree.
    fn view_answers(ledger: &Ledger) -> (serde_json::Value, Vec<Vec<serde_json::Value>>, String) {
        use crate::context::log::{Filter, query};
        let digest = crate::context::review::pending_from(ledger, None, None);
        let by_status = crate::ops::Status::ALL
            .iter()
            .map(|&status| {
                let filter = Filter {
                    status: Some(status),
                    ..Filter::default()
                };
                query(ledger, &filter)
                    .into_iter()
                    .map(|e| e.to_json())
                    .collect()
            })
            .collect();
        let disagreeing = format!("{:?}", crate::context::disagreements_at(ledger, NOW as i64));
        (
            serde_json::to_value(digest).unwrap(),
            by_status,
            disagreeing,
        )
    }

    /// What each listing of one kind the view with every decision holds
    /// prints (`context log --kind K --json`).
    fn kind_answers(ledger: &Ledger) -> Vec<Vec<serde_json::Value>> {
        use crate::context::log::{Filter, query};
        Kind::ALL
            .iter()
            .filter(|&&kind| Ledger::decisions_hold(kind))
            .map(|&kind| {
                let filter = Filter {
                    kind: Some(kind),
                    ..Filter::default()
                };
                query(ledger, &filter)
                    .into_iter()
                    .map(|e| e.to_json())
                    .collect()
            })
            .collect()
    }

    /// The digest `decisions::digest` gives `reader`, from a whole ledger.
    fn digest_of(ledger: &Ledger, reader: &Actor) -> crate::context::decisions::Digest {
        let items = crate::context::review::pending_from(ledger, None, Some(reader));
        let not_counted = ledger
            .ignored
            .iter()
            .filter(|i| crate::ops::trust::is_signature_reason(&i.reason))
            .map(|i| crate::context::decisions::NotCounted {
                id: i.id,
                reason: i.reason.clone(),
            })
            .collect();
        let (awaiting, in_force) = items.into_iter().partition(|p| p.awaiting);
        crate::context::decisions::Digest {
            awaiting,
            in_force,
            disagreeing: Vec::new(),
            not_counted,
        }
    }

    fn fresh(session: &Session) -> Ledger {
        session
            .unfolded(session.store.load_all().unwrap().records)
            .folded()
    }

    /// Read the log after each step, both ways, against a fresh fold.
    /// As a long-running process reads (`one_call` false: a fold kept
    /// between calls, advanced as the logs move) or as a command line run
    /// (every read through the checkpoint's files).
    fn reads_match_a_fresh_fold(steps: &[Step], one_call: bool) -> Result<(), TestCaseError> {
        let repo = Repo::new();
        repo.write("kapi.toml", &config(true, false));
        let env = || match one_call {
            true => FixedEnv::new(NOW, 5).one_call(),
            false => FixedEnv::new(NOW, 5),
        };
        let open = || Session::open(Arc::new(env()), repo.path()).unwrap();
        let mut session = open();
        // Another process beside it that only ever reads the reader's view
        // and the view with every decision (an agent's MCP server: its
        // checks and searches), so its memo keeps the view alone and reads
        // both again through the checkpoint as the logs move.
        let mut viewer = open();
        let start = NOW - 3_600_000;
        let mut newest = start;
        let mut n = 0u64;
        for (k, step) in steps.iter().enumerate() {
            let log = session.store.load_all().unwrap().records;
            // On every third step, a writer that read the whole ledger to
            // decide (a person's keep) hands it over once the step's
            // operations are on the log, and its view is saved for the
            // reads below when it can be advanced to them.
            let deciding = (k % 3 == 2).then(|| session.ledger().unwrap());
            let mut batch = Vec::new();
            match step {
                Step::Append(gens) => {
                    for g in gens {
                        n += 1;
                        newest += 1000;
                        batch.push(record(g, newest, n, &log));
                    }
                }
                Step::Checks(addresses) => {
                    for a in addresses {
                        n += 1;
                        newest += 1000;
                        batch.push(record(&Gen::Check(*a), newest, n, &log));
                    }
                }
                Step::Merge(gens, at) => {
                    for (k, g) in gens.iter().enumerate() {
                        n += 1;
                        let ms = start + (u64::from(*at) + k as u64 * 977) % (newest - start + 1);
                        batch.push(record(g, ms, n, &log));
                    }
                }
                Step::Reset(t) => {
                    if !log.is_empty() {
                        n += 1;
                        newest += 1000;
                        let mut r = record(&Gen::Note, newest, n, &log);
                        r.kind = Kind::Reset;
                        r.subject = None;
                        r.actor.kind = ActorKind::Person;
                        r.before = Some(log[t % log.len()].id.clone());
                        batch.push(r);
                    }
                }
                Step::Rewind => {
                    let tip = std::process::Command::new("git")
                        .args(["rev-parse", "-q", "--verify", "refs/kapi/ops~1"])
                        .current_dir(repo.path())
                        .output()
                        .unwrap();
                    let tip = String::from_utf8(tip.stdout).unwrap();
                    if !tip.trim().is_empty() {
                        crate::git::tests::sh(
                            repo.path(),
                            &["update-ref", "refs/kapi/ops", tip.trim()],
                        );
                    }
                }
                Step::Damage(which) => {
                    let name = [
                        "fold.checkpoint",
                        "fold.base",
                        "fold.decisions",
                        "fold.history",
                    ][*which as usize];
                    let file = session.store.kapi_dir().join(name);
                    if let Ok(mut bytes) = std::fs::read(&file) {
                        // In the ledger's bytes: the checksum refuses them.
                        let middle = bytes.len() / 2;
                        bytes[middle] ^= 0x20;
                        std::fs::write(&file, bytes).unwrap();
                    }
                }
                Step::Config(typed, keep_only) => {
                    repo.write("kapi.toml", &config(*typed, *keep_only));
                    session = open();
                    viewer = open();
                }
            }
            if !batch.is_empty() {
                session.store.merge_records(&batch, NOW).unwrap();
            }
            if let Some(ledger) = deciding {
                crate::context::checkpointed::after_write(&session, ledger);
            }
            let expected = fresh(&session);
            for _ in 0..2 {
                prop_assert_eq!(
                    answer(&viewer.rules_ledger().unwrap()),
                    answer(&expected.view())
                );
                let (view, _) = viewer.rules_view(None).unwrap();
                prop_assert_eq!(view_answers(&view), view_answers(&expected));
                // Its searches read the view with every decision, without
                // keeping a whole ledger.
                let (decisions, _) = viewer.decisions_ledger().unwrap();
                prop_assert_eq!(answer(&decisions), answer(&expected.decisions()));
                prop_assert_eq!(kind_answers(&decisions), kind_answers(&expected));
            }
            // Twice: once folding or applying, once from the checkpoint as
            // written; the view with every decision and the reader's view
            // first on every other step (they answer alone when only check
            // runs came since; a long-running process reads them through
            // the checkpoint while it holds no whole ledger at these tips).
            for _ in 0..2 {
                if k % 2 == 1 {
                    let (decisions, _) = session.decisions_ledger().unwrap();
                    prop_assert_eq!(answer(&decisions), answer(&expected.decisions()));
                    prop_assert_eq!(kind_answers(&decisions), kind_answers(&expected));
                    prop_assert_eq!(
                        answer(&session.rules_ledger().unwrap()),
                        answer(&expected.view())
                    );
                }
                prop_assert_eq!(answer(&session.ledger().unwrap()), answer(&expected));
                prop_assert_eq!(
                    answer(&session.rules_ledger().unwrap()),
                    answer(&expected.view())
                );
            }
            // What reads the view instead of the whole ledger (the review
            // digest, a listing by status) answers as the fresh fold does;
            // and a listing of one kind, from the view with every decision
            // (twice: once folding or applying, once from its file).
            for _ in 0..2 {
                let (decisions, _) = session.decisions_ledger().unwrap();
                prop_assert!(decisions.is_view());
                prop_assert_eq!(decisions.log_len(), expected.records().len());
                prop_assert_eq!(
                    session.rules_ledger().unwrap().log_len(),
                    expected.records().len()
                );
                prop_assert_eq!(answer(&decisions), answer(&expected.decisions()));
                prop_assert_eq!(kind_answers(&decisions), kind_answers(&expected));
            }
            // Every subject's history (`context log --history`), with the
            // fold shaped as each listing reads it: as the one pass over
            // the log gives it (twice: once folding, once from the kept
            // file).
            let fresh_histories = crate::ops::history::histories(
                session.unfolded(session.store.load_all().unwrap().records),
            );
            for want in [Want::Full, Want::Decisions, Want::View, Want::Full] {
                let (histories, _) = session.histories_for(want).unwrap();
                prop_assert_eq!(
                    answer(&histories.ledger),
                    answer(&match want {
                        Want::Full => expected.clone(),
                        Want::Decisions => expected.decisions(),
                        Want::View => expected.view(),
                    })
                );
                for r in expected.records() {
                    prop_assert_eq!(histories.of(&r.op_id()), fresh_histories.of(&r.op_id()));
                }
            }
            let (view, _) = session.rules_view(None).unwrap();
            prop_assert_eq!(view_answers(&view), view_answers(&expected));
            let digest = crate::context::decisions::digest(&session, None).unwrap();
            prop_assert_eq!(
                serde_json::to_value(&digest).unwrap(),
                serde_json::to_value(digest_of(&expected, session.actor())).unwrap()
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn a_checkpointed_read_is_a_fresh_fold(steps in proptest::collection::vec(step(), 1..10), one_call in any::<bool>()) {
            reads_match_a_fresh_fold(&steps, one_call)?;
        }
    }

    /// Histories kept for these tips by other code or another log (a
    /// rule kept here, dropped there: a good checksum, the same subjects
    /// and length) are not taken: they end at statuses the fold does not
    /// give, so the log is folded again and the file written anew.
    #[test]
    fn forged_histories_are_not_obeyed() {
        let repo = Repo::new();
        let session = Session::open(Arc::new(FixedEnv::new(NOW, 5)), repo.path()).unwrap();
        let start = NOW - 3_600_000;
        let rule = record(&Gen::Term(0, false), start + 1000, 1, &[]);
        let keep = record(&Gen::Keep(0), start + 2000, 2, std::slice::from_ref(&rule));
        let mut drop = record(&Gen::Drop(0), start + 2000, 2, std::slice::from_ref(&rule));
        drop.id = keep.id.clone();
        session
            .store
            .merge_records(&[rule.clone(), keep.clone()], NOW)
            .unwrap();
        let (honest, _) = session.histories_for(Want::Full).unwrap();
        let kept_to = honest.of(&rule.op_id()).last().unwrap().to;
        let forged = crate::ops::history::histories(session.unfolded(vec![rule.clone(), drop]));
        let forged_to = forged.of(&rule.op_id()).last().unwrap().to;
        assert_ne!(kept_to, forged_to);
        let dir = session.store.kapi_dir();
        let print = crate::context::checkpointed::history_print(&session);
        let tips = session.store.tips().unwrap();
        crate::store::checkpoint::write(
            &dir,
            crate::store::checkpoint::Part::History,
            &print,
            crate::store::checkpoint::Header::new(tips, 0, Vec::new()),
            |out| forged.write_kept(out),
        )
        .unwrap();
        for _ in 0..2 {
            let (read, _) = session.histories_for(Want::Full).unwrap();
            assert_eq!(read.of(&rule.op_id()), honest.of(&rule.op_id()));
            let (read, _) = session.histories_for(Want::Decisions).unwrap();
            assert_eq!(read.of(&rule.op_id()).last().unwrap().to, kept_to);
        }
    }

    /// A hook's check run repeating a content address: the reader's view
    /// is not taken forward past it (a fresh fold sets it aside).
    #[test]
    fn a_repeated_check_run_is_not_taken_into_the_view() {
        let steps = [
            Step::Append(vec![Gen::Term(0, false)]),
            Step::Checks(vec![1]),
            Step::Checks(vec![2]),
            Step::Checks(vec![1]),
        ];
        for one_call in [false, true] {
            reads_match_a_fresh_fold(&steps, one_call).unwrap();
        }
    }
}

#[test]
fn an_agent_dates_its_writes_by_the_machine_clock_outside_test_builds() {
    use crate::ops::record::ActorKind;
    let (pinned, wall) = (1_000, 90_000_000);
    assert_eq!(
        super::write_clock(ActorKind::Agent, pinned, wall, false),
        wall
    );
    assert_eq!(
        super::write_clock(ActorKind::Agent, pinned, wall, true),
        pinned
    );
    for kind in [ActorKind::Person, ActorKind::Tool] {
        assert_eq!(super::write_clock(kind, pinned, wall, false), pinned);
    }
}

#[test]
fn a_fix_refuses_a_file_changed_since_it_was_checked_and_writes_nothing() {
    use super::apply::{Rewrite, rewrite};
    use super::fix::{FixMode, fix};
    let repo = Repo::new();
    repo.write("docs/a.md", "Quick cast streams.\n");
    repo.write("docs/b.md", "Quick cast records.\n");
    repo.write("terms.tsv", "1\testablished\tQuickcast\tQuick cast\n");
    let person = repo.person();
    let request = CheckRequest {
        cwd: repo.path().to_path_buf(),
        extra_rules: vec!["terms.tsv".into()],
        ..CheckRequest::default()
    };
    let shown = fix(Some(&person), &request, FixMode::Diff).unwrap();
    assert_eq!(shown.fixes(), 2);
    // docs/b.md changes after the check read it: the texts made from the
    // check are refused, the first file included.
    repo.write("docs/b.md", "Quick cast records, now.\n");
    let rewrites = shown
        .files
        .iter()
        .map(|f| Rewrite {
            path: f.fixed.path.clone(),
            before: f.before.clone(),
            after: f.after.clone(),
            edits: f.fixed.fixes,
        })
        .collect();
    let e = rewrite(&person, rewrites).unwrap_err().to_string();
    assert_eq!(
        e,
        "docs/b.md changed since it was checked; nothing was written: check it again"
    );
    let read = |rel: &str| std::fs::read_to_string(repo.path().join(rel)).unwrap();
    assert_eq!(read("docs/a.md"), "Quick cast streams.\n");
    assert_eq!(read("docs/b.md"), "Quick cast records, now.\n");
    // A fix reads what is there now.
    let written = fix(Some(&person), &request, FixMode::Write).unwrap();
    assert_eq!(written.fixes(), 2);
    assert!(!written.report.failed());
    assert_eq!(read("docs/b.md"), "Quickcast records, now.\n");
}

#[test]
fn the_workspace_atlas_reads_another_log_within_its_bounds() {
    let repo = Repo::new();
    let agent = repo.agent(FixedEnv::new(NOW, 7));
    note(&agent, term("Quickcast", "Quick cast", "docs/intro.md")).unwrap();
    let root = repo.path().canonicalize().unwrap();
    let project = agent.project.clone();
    let (read, unreadable) = super::workspace::atlas::load(&root, &project, 10).unwrap();
    assert_eq!(read.ledger.records().len(), 1);
    assert_eq!(unreadable, 0);
    // Past the room left, the log is not read, and the reason says so.
    let refused = super::workspace::atlas::load(&root, &project, 0)
        .err()
        .unwrap();
    assert!(refused.contains("over the 0 the atlas reads"), "{refused}");
    // Operations claiming another project are not that project's.
    let (other, _) = super::workspace::atlas::load(&root, "someone-else", 10).unwrap();
    assert!(other.ledger.records().is_empty());
    // A folder inside the checkout is not a checkout.
    std::fs::create_dir(root.join("docs")).unwrap();
    assert!(super::workspace::atlas::load(&root.join("docs"), &project, 10).is_err());
}
