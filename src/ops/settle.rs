//! Settling as readers see it: the project's setting ([`Settling`],
//! `[context] settle`), and what settling leaves to record: the
//! establishments a folded ledger supports that no binding `establish`
//! names yet ([`due`]), each with the content address two machines
//! settling the same log agree on. Settling itself runs inside the fold
//! (`fold/settle.rs`); the tests here drive it through the whole fold.

pub use super::fold::settle::Settling;

use super::fold::settle::{establish_address, evidence_key};
use super::fold::{Ledger, State, Status};
use super::id::OpId;

/// An establishment the log supports that no binding `establish` names
/// yet: the suggestion, the person signals it rests on, and its content
/// address (from the suggestion and what its signals are: see
/// [`establish_address`]), so two machines settling the same log record
/// one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub target: OpId,
    pub because: Vec<OpId>,
    pub address: String,
}

/// Whether settling established this subject on evidence with no binding
/// `establish` naming it yet.
fn unrecorded(state: &State) -> bool {
    state.status == Status::Established && !state.because.is_empty() && state.decided_by.is_none()
}

/// Whether settling would record anything over a folded ledger: what
/// [`due`] finds, asked of the subjects' states alone, so a reader's view
/// (whose states answer as the whole ledger's) tells without the evidence.
pub fn any_due(ledger: &Ledger) -> bool {
    ledger
        .iter()
        .any(|(_, state)| state.is_some_and(unrecorded))
}

/// What settling would record over a folded ledger.
pub fn due(ledger: &Ledger) -> Vec<Due> {
    ledger
        .iter()
        .filter_map(|(record, state)| {
            let state = state?;
            unrecorded(state).then(|| {
                let keys: Vec<&str> = state
                    .because
                    .iter()
                    .map(|b| ledger.get(b).map_or(b.as_str(), evidence_key))
                    .collect();
                Due {
                    target: record.op_id(),
                    because: state.because.clone(),
                    address: establish_address(&record.op_id(), &keys),
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::ops::fold::{Status, fold};
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{
        Actor, ActorKind, Correction, Evidence, Kind, Record, Scope, Signal, SignalSource, Subject,
    };

    fn op(n: u64, kind: Kind, actor: ActorKind, session: &str) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new(
                "p",
                Actor {
                    kind: actor,
                    name: "x".into(),
                    session: Some(session.into()),
                },
                kind,
            )
        }
    }

    fn at(section: &str) -> Scope {
        Scope {
            point: [("section".to_string(), section.to_string())].into(),
            ..Scope::default()
        }
    }

    /// An agent's suggestion of Quickcast over "Quick cast", seen in a file
    /// of `section`.
    fn suggestion(n: u64, section: &str) -> Record {
        Record {
            subject: Some(Box::new(Subject::Term {
                preferred: "Quickcast".into(),
                avoid: vec!["Quick cast".into(), "Quick-cast".into()],
            })),
            evidence: vec![Evidence {
                path: Some(format!("docs/{section}/a.md")),
                ..Evidence::default()
            }]
            .into(),
            scope: at(section).into(),
            ..op(n, Kind::Observe, ActorKind::Agent, "s1")
        }
    }

    fn correction(n: u64, from: &str, to: &str, section: &str, who: ActorKind) -> Record {
        Record {
            correction: Some(Box::new(Correction {
                from: from.into(),
                to: to.into(),
            })),
            evidence: vec![Evidence {
                path: Some(format!("docs/{section}/b.md")),
                ..Evidence::default()
            }]
            .into(),
            scope: at(section).into(),
            ..op(n, Kind::Correct, who, "s2")
        }
    }

    fn merge(n: u64, target: &Record, preferred: u64) -> Record {
        Record {
            target: Some(target.id.clone()),
            signal: Some(Box::new(Signal {
                source: SignalSource::Merge,
                preferred,
                avoided: 0,
                commit: Some("0123456789abcdef".into()),
                pr: Some("412".into()),
                merger: Some("ada".into()),
            })),
            ..op(n, Kind::Signal, ActorKind::Tool, "ci")
        }
    }

    fn status(records: &[Record], of: &Record) -> Status {
        fold(records.to_vec()).state(&of.op_id()).unwrap().status
    }

    #[test]
    fn a_correction_in_the_help_pages_settles_only_the_help_pages_suggestion() {
        let help = suggestion(1, "help");
        let legal = suggestion(2, "legal");
        let fix = correction(
            3,
            "Open Quick cast",
            "Open Quickcast",
            "help",
            ActorKind::Person,
        );
        let log = vec![help.clone(), legal.clone(), fix.clone()];
        assert_eq!(status(&log, &help), Status::Established);
        assert_eq!(status(&log, &legal), Status::Suggested);
        let ledger = fold(log);
        let state = ledger.state(&help.op_id()).unwrap();
        assert_eq!(state.because, vec![fix.op_id()]);
        assert_eq!(state.standing.toward, 1);
        assert!(state.decided_by.is_none(), "no establish recorded yet");
        // The correction is not evidence for the rule it carries itself.
        let implied = Record {
            subject: help.subject.clone(),
            ..fix.clone()
        };
        assert_eq!(
            status(std::slice::from_ref(&implied), &implied),
            Status::Suggested
        );
    }

    #[test]
    fn a_session_does_not_vouch_for_its_own_suggestion() {
        // The suggestion is the agent x's in session s1.
        let a = suggestion(1, "help");
        let by = |n: u64, name: &str, session: Option<&str>| Record {
            actor: Actor {
                kind: ActorKind::Agent,
                name: name.into(),
                session: session.map(Into::into),
            },
            ..correction(n, "Quick cast", "Quickcast", "help", ActorKind::Agent)
        };
        // Its own session, or the same session under another name.
        for own in [by(2, "x", Some("s1")), by(2, "y", Some("s1"))] {
            let ledger = fold(vec![a.clone(), own]);
            let state = ledger.state(&a.op_id()).unwrap();
            assert_eq!(state.status, Status::Suggested);
            assert_eq!(state.standing.toward, 0);
        }
        // The same agent naming no session cannot show it is another one.
        assert_eq!(
            status(&[a.clone(), by(2, "x", None)], &a),
            Status::Suggested
        );
        let nameless = Record {
            actor: Actor {
                session: None,
                ..a.actor.clone()
            },
            ..a.clone()
        };
        assert_eq!(
            status(&[nameless.clone(), by(2, "x", Some("s2"))], &nameless),
            Status::Suggested
        );
        // Another session of the same agent, or another agent, is another party.
        assert_eq!(
            status(&[a.clone(), by(2, "x", Some("s2"))], &a),
            Status::Established
        );
        assert_eq!(
            status(&[nameless.clone(), by(2, "y", None)], &nameless),
            Status::Established
        );
        // Its own correction away from it still counts against it.
        let toward = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let away = Record {
            actor: a.actor.clone(),
            ..correction(3, "Quickcast", "Quick-cast", "help", ActorKind::Agent)
        };
        assert_eq!(status(&[a.clone(), toward, away], &a), Status::Contested);
    }

    #[test]
    fn time_alone_and_standing_alone_settle_nothing() {
        let a = suggestion(1, "help");
        let again = Record {
            actor: Actor {
                session: Some("s9".into()),
                ..a.actor.clone()
            },
            ..suggestion(50, "help")
        };
        let log = vec![a.clone(), again];
        assert_eq!(status(&log, &a), Status::Suggested);
        assert_eq!(fold(log).state(&a.op_id()).unwrap().standing.sessions, 2);
    }

    #[test]
    fn evidence_for_and_against_contests_and_names_what_stands_against() {
        let a = suggestion(1, "help");
        let toward = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let away = correction(3, "Quickcast", "Quick-cast", "help", ActorKind::Agent);
        let ledger = fold(vec![a.clone(), toward, away.clone()]);
        let state = ledger.state(&a.op_id()).unwrap();
        assert_eq!(state.status, Status::Contested);
        assert_eq!(state.contested_by, vec![away.op_id()]);
    }

    #[test]
    fn a_merge_signal_establishes_the_suggestion_it_names_and_shows_the_pull_request() {
        let a = suggestion(1, "help");
        let b = suggestion(2, "legal");
        let signal = merge(3, &a, 2);
        let ledger = fold(vec![a.clone(), b.clone(), signal]);
        assert_eq!(
            ledger.state(&a.op_id()).unwrap().status,
            Status::Established
        );
        assert_eq!(ledger.state(&b.op_id()).unwrap().status, Status::Suggested);
        let standing = ledger.state(&a.op_id()).unwrap().standing.describe();
        assert!(standing.contains("merged in #412"), "{standing}");
        // A merge that wrote none of it is no signal.
        assert_eq!(status(&[a.clone(), merge(4, &a, 0)], &a), Status::Suggested);
    }

    #[test]
    fn a_suggestion_with_no_place_is_never_settled() {
        let a = Record {
            evidence: vec![Evidence {
                quote: Some("Quick cast".into()),
                ..Evidence::default()
            }]
            .into(),
            ..suggestion(1, "help")
        };
        let log = vec![a.clone(), merge(2, &a, 1)];
        assert_eq!(status(&log, &a), Status::Suggested);
    }

    #[test]
    fn a_drop_sets_aside_the_evidence_gathered_before_it() {
        let a = suggestion(1, "help");
        let fix = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let drop = Record {
            target: Some(a.id.clone()),
            ..op(3, Kind::Drop, ActorKind::Person, "p")
        };
        let b = suggestion(4, "help");
        let log = vec![a.clone(), fix, drop, b.clone()];
        assert_eq!(status(&log, &a), Status::Dropped);
        assert_eq!(status(&log, &b), Status::Suggested);
        let later = correction(5, "Quick-cast", "Quickcast", "help", ActorKind::Person);
        let mut log = log;
        log.push(later);
        assert_eq!(status(&log, &b), Status::Established);
    }

    #[test]
    fn a_project_that_keeps_every_rule_by_hand_settles_nothing() {
        use super::Settling;
        let a = suggestion(1, "help");
        let fix = correction(3, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let log = vec![a.clone(), merge(2, &a, 1), fix];
        let by_hand = |log: Vec<Record>| {
            crate::ops::Ledger::new(log)
                .with_settling(Settling::KeepOnly)
                .folded()
        };
        assert_eq!(status(&log, &a), Status::Established, "by evidence");
        let ledger = by_hand(log.clone());
        let state = ledger.state(&a.op_id()).unwrap();
        assert_eq!(state.status, Status::Suggested);
        assert_eq!(state.standing.toward, 2, "the evidence still counts");
        assert!(super::due(&ledger).is_empty(), "nothing to record");
        // A person's keep establishes it.
        let keep = Record {
            target: Some(a.id.clone()),
            ..op(4, Kind::Keep, ActorKind::Person, "p")
        };
        let mut log = log;
        log.push(keep);
        assert_eq!(
            by_hand(log).state(&a.op_id()).unwrap().status,
            Status::Established
        );
    }

    #[test]
    fn one_merge_counted_and_settled_on_two_machines_is_one_establishment() {
        let a = suggestion(1, "help");
        let addressed = |n: u64| Record {
            address: Some("sha256:the-merge".into()),
            ..merge(n, &a, 1)
        };
        // Machine one counts the merge first; machine two counts it next
        // and settles before machine one does.
        let (one, two) = (addressed(2), addressed(3));
        let settle_on = |signal: &Record, n: u64| {
            let due = super::due(&fold(vec![a.clone(), signal.clone()]));
            assert_eq!(due.len(), 1);
            Record {
                target: Some(a.id.clone()),
                because: due[0].because.iter().map(|b| b.to_string()).collect(),
                address: Some(due[0].address.clone()),
                ..op(n, Kind::Establish, ActorKind::Tool, "settle")
            }
        };
        let (by_two, by_one) = (settle_on(&two, 4), settle_on(&one, 5));
        assert_eq!(by_two.address, by_one.address, "one establishment");
        // Merged: the younger signal and the younger establish repeat an
        // address and are set aside; the establish that stands rests on the
        // signal set aside, and still binds (it is this evidence's).
        let ledger = fold(vec![a.clone(), one, two.clone(), by_two.clone(), by_one]);
        let state = ledger.state(&a.op_id()).unwrap();
        assert_eq!(state.status, Status::Established);
        assert_eq!(state.decided_by, Some(by_two.op_id()));
        assert!(super::due(&ledger).is_empty(), "nothing more to record");
        assert_eq!(ledger.ignored.len(), 2);
    }

    #[test]
    fn an_establish_binds_only_while_its_evidence_holds() {
        let a = suggestion(1, "help");
        let fix = correction(2, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let establish = Record {
            target: Some(a.id.clone()),
            because: vec![fix.id.to_string()].into(),
            address: Some("sha256:e".into()),
            ..op(3, Kind::Establish, ActorKind::Tool, "settle")
        };
        let ledger = fold(vec![a.clone(), fix.clone(), establish.clone()]);
        let state = ledger.state(&a.op_id()).unwrap();
        assert_eq!(state.status, Status::Established);
        assert_eq!(state.decided_by, Some(establish.op_id()));
        // The correction dropped: the establish no longer binds.
        let drop_fix = Record {
            target: Some(fix.id.clone()),
            ..op(4, Kind::Drop, ActorKind::Person, "p")
        };
        let log = vec![a.clone(), fix, establish, drop_fix];
        assert_eq!(status(&log, &a), Status::Suggested);
        // An agent's establish is refused by the policy.
        let forged = Record {
            target: Some(a.id.clone()),
            ..op(5, Kind::Establish, ActorKind::Agent, "s1")
        };
        let ledger = fold(vec![a.clone(), forged.clone()]);
        assert!(ledger.ignored.iter().any(|i| i.id == forged.op_id()));
        assert_eq!(ledger.state(&a.op_id()).unwrap().status, Status::Suggested);
    }

    #[test]
    fn a_rival_rule_leaves_both_contested_for_a_person() {
        let a = suggestion(1, "help");
        let rival = Record {
            subject: Some(Box::new(Subject::Term {
                preferred: "QuickCast".into(),
                avoid: vec!["Quick cast".into()],
            })),
            ..suggestion(2, "help")
        };
        let fix = correction(3, "Quick cast", "Quickcast", "help", ActorKind::Person);
        let ledger = fold(vec![a.clone(), rival.clone(), fix]);
        assert_eq!(ledger.state(&a.op_id()).unwrap().status, Status::Contested);
        assert_eq!(
            ledger.state(&a.op_id()).unwrap().contested_by,
            vec![rival.op_id()]
        );
    }

    mod merge_order {
        use super::*;
        use crate::ops::fold::Ledger;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Gen {
            Suggest(bool),
            Toward(bool, bool),
            Away(bool),
            Merge(usize, u64),
            Drop(usize),
        }

        fn operation() -> impl Strategy<Value = Gen> {
            prop_oneof![
                3 => any::<bool>().prop_map(Gen::Suggest),
                2 => (any::<bool>(), any::<bool>()).prop_map(|(h, p)| Gen::Toward(h, p)),
                1 => any::<bool>().prop_map(Gen::Away),
                1 => (0usize..16, 0u64..2).prop_map(|(t, n)| Gen::Merge(t, n)),
                1 => (0usize..16).prop_map(Gen::Drop),
            ]
        }

        fn build(gens: &[Gen]) -> Vec<Record> {
            let mut out: Vec<Record> = Vec::new();
            for (n, g) in gens.iter().enumerate() {
                let n = n as u64 + 1;
                let section = |help: bool| if help { "help" } else { "legal" };
                let pick = |t: usize, out: &[Record]| {
                    let rules: Vec<&Record> =
                        out.iter().filter(|r| r.kind == Kind::Observe).collect();
                    (!rules.is_empty()).then(|| rules[t % rules.len()].clone())
                };
                let r = match g {
                    Gen::Suggest(help) => suggestion(n, section(*help)),
                    Gen::Toward(help, person) => correction(
                        n,
                        "Quick cast",
                        "Quickcast",
                        section(*help),
                        if *person {
                            ActorKind::Person
                        } else {
                            ActorKind::Agent
                        },
                    ),
                    Gen::Away(help) => correction(
                        n,
                        "Quickcast",
                        "Quick-cast",
                        section(*help),
                        ActorKind::Person,
                    ),
                    Gen::Merge(t, p) => match pick(*t, &out) {
                        Some(target) => merge(n, &target, *p),
                        None => suggestion(n, "help"),
                    },
                    Gen::Drop(t) => match pick(*t, &out) {
                        Some(target) => Record {
                            target: Some(target.id.clone()),
                            ..op(n, Kind::Drop, ActorKind::Person, "p")
                        },
                        None => suggestion(n, "legal"),
                    },
                };
                out.push(r);
            }
            out
        }

        /// The establish records one machine's settling adds, minted after
        /// everything it holds.
        fn settled(records: &[Record], machine: u64) -> Vec<Record> {
            let folded = fold(records.to_vec());
            let due = super::super::due(&folded);
            // The reader's view tells whether anything is due as the
            // whole ledger does (the post-merge hook asks it first).
            assert_eq!(super::super::any_due(&folded.view()), !due.is_empty());
            due.into_iter()
                .enumerate()
                .map(|(k, d)| Record {
                    target: Some(d.target.to_string().into()),
                    because: d.because.iter().map(|b| b.to_string()).collect(),
                    address: Some(d.address),
                    ..op(
                        1000 + 10 * k as u64 + machine,
                        Kind::Establish,
                        ActorKind::Tool,
                        "settle",
                    )
                })
                .collect()
        }

        fn statuses(ledger: &Ledger) -> Vec<(String, Status)> {
            ledger
                .iter()
                .filter_map(|(r, s)| Some((r.id.to_string(), s?.status)))
                .collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

            /// Two machines each hold part of a log and settle it; merged in
            /// either order, with either machine's establishes, the fold
            /// answers as the union's evidence says, and settling the merged
            /// log again records nothing new for what already binds.
            #[test]
            fn settling_does_not_depend_on_merge_order(
                gens in proptest::collection::vec(operation(), 1..24),
                split in proptest::collection::vec(any::<bool>(), 24),
            ) {
                let records = build(&gens);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (i, r) in records.iter().enumerate() {
                    if split[i] { a.push(r.clone()) } else { b.push(r.clone()) }
                }
                let (ea, eb) = (settled(&a, 1), settled(&b, 2));
                let evidence_alone = statuses(&fold(records.clone()));
                let mut ab: Vec<Record> = a.iter().chain(&ea).chain(&b).chain(&eb).cloned().collect();
                let ab_fold = fold(ab.clone());
                ab.reverse();
                let ba_fold = fold(ab);
                let subjects = |s: Vec<(String, Status)>| -> Vec<(String, Status)> {
                    s.into_iter().filter(|(id, _)| records.iter().any(|r| r.id == id)).collect()
                };
                prop_assert_eq!(subjects(statuses(&ab_fold)), subjects(statuses(&ba_fold)));
                prop_assert_eq!(subjects(statuses(&ab_fold)), evidence_alone);
                // What is due after merging: only establishments whose
                // evidence neither side's establish named.
                for d in super::super::due(&ab_fold) {
                    let named = ea.iter().chain(&eb).any(|e| {
                        e.target.as_deref() == Some(d.target.as_str())
                            && e.because.iter().all(|x| d.because.iter().any(|y| y.as_str() == x))
                    });
                    prop_assert!(!named, "{:?} is due though an establish names it", d);
                }
            }
        }
    }
}
