//! `kapi context session <id>`: what one agent session recorded, what
//! became of it, and what its check runs caught. Everything is derived
//! from the log (the shared operations and the check runs on
//! `refs/kapi/local`); nothing stores the counts.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ops::record::{CheckFailure, Kind, Record};
use crate::ops::{Ledger, OpId, Status};

/// One operation the session recorded, and its status now.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub id: OpId,
    pub short: String,
    pub kind: &'static str,
    /// The subject in words, or the operation it acted on.
    pub what: String,
    /// What became of it (subjects only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// A failing finding one run reported and the session's next run covering
/// its file did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caught {
    pub path: String,
    pub rule: String,
    pub quote: String,
    /// The run that reported it.
    pub reported_by: OpId,
    /// The run that no longer found it.
    pub cleared_by: OpId,
}

/// A failing finding no later run of the session has cleared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Open {
    pub path: String,
    pub rule: String,
    pub quote: String,
    pub reported_by: OpId,
}

/// What a session did, derived from the log.
#[derive(Debug, Clone, Serialize)]
pub struct SessionOutcomes {
    pub session: String,
    /// The agent (or tool) the session's operations name.
    pub actors: Vec<String>,
    /// The operations it recorded (check runs aside), in id order.
    pub recorded: Vec<Recorded>,
    /// Its check runs.
    pub runs: usize,
    pub clean_runs: usize,
    pub caught: Vec<Caught>,
    pub open: Vec<Open>,
    /// Of what it suggested, how many await a person's decision.
    pub pending: usize,
    /// The command that reviews what it suggested.
    pub review: String,
}

/// Whether `run` covers a finding in `path`: a Stop run covers every file,
/// an edit run its own.
fn covers(run: &crate::ops::record::CheckRun, path: &str) -> bool {
    run.hook != "edit" || run.files.iter().any(|f| f == path)
}

fn same(a: &CheckFailure, path: &str, rule: &str, quote: &str) -> bool {
    a.path == path && a.rule == rule && a.quote == quote
}

/// Derive what `session` did from the folded log.
pub fn outcomes(ledger: &Ledger, session: &str) -> SessionOutcomes {
    let ours = |r: &Record| r.actor.session.as_deref() == Some(session);
    let ignored: std::collections::HashSet<&str> =
        ledger.ignored.iter().map(|i| i.id.as_str()).collect();
    let mut actors: Vec<String> = Vec::new();
    let mut recorded = Vec::new();
    let mut runs = 0;
    let mut clean_runs = 0;
    let mut pending = 0;
    // (path, rule, quote) → the run that reported it, still open.
    let mut open: BTreeMap<(String, String, String), OpId> = BTreeMap::new();
    let mut caught = Vec::new();
    for (record, state) in ledger.iter() {
        if !ours(record) || ignored.contains(record.id.as_str()) {
            continue;
        }
        let label = record.actor.label();
        if !actors.contains(&label) {
            actors.push(label);
        }
        if record.kind == Kind::Check {
            let Some(run) = record.check.as_deref() else {
                continue;
            };
            runs += 1;
            if run.clean {
                clean_runs += 1;
            }
            open.retain(|(path, rule, quote), reported_by| {
                let cleared =
                    covers(run, path) && !run.failing.iter().any(|f| same(f, path, rule, quote));
                if cleared {
                    caught.push(Caught {
                        path: path.clone(),
                        rule: rule.clone(),
                        quote: quote.clone(),
                        reported_by: *reported_by,
                        cleared_by: record.op_id(),
                    });
                }
                !cleared
            });
            for f in &run.failing {
                open.entry((f.path.clone(), f.rule.clone(), f.quote.clone()))
                    .or_insert_with(|| record.op_id());
            }
            continue;
        }
        let status = state.map(|s| s.status);
        if matches!(status, Some(Status::Suggested | Status::Contested)) {
            pending += 1;
        }
        let what = match (
            record.subject.as_deref(),
            &record.correction,
            &record.target,
        ) {
            (_, Some(c), _) => format!("\"{}\" → \"{}\"", c.from, c.to),
            (Some(subject), None, _) => subject.describe(),
            (None, None, Some(target)) => format!("#{}", crate::ops::id::short(target)),
            (None, None, None) => String::new(),
        };
        recorded.push(Recorded {
            id: record.op_id(),
            short: record.short().to_owned(),
            kind: record.kind.as_str(),
            what,
            status,
        });
    }
    SessionOutcomes {
        session: session.to_owned(),
        actors,
        recorded,
        runs,
        clean_runs,
        caught,
        open: open
            .into_iter()
            .map(|((path, rule, quote), reported_by)| Open {
                path,
                rule,
                quote,
                reported_by,
            })
            .collect(),
        pending,
        review: format!("kapi context review --session {}", shell_word(session)),
    }
}

/// `word` as one shell word (quoted when it holds anything but safe
/// characters).
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::fold;
    use crate::ops::record::{Actor, ActorKind, CheckRun};

    fn run(n: u64, session: &str, hook: &str, files: &[&str], failing: &[(&str, &str)]) -> Record {
        let id = crate::ops::id::OpId::mint(1_800_000_000_000 + n, u128::from(n), None)
            .unwrap()
            .to_string();
        Record {
            id: id.clone().into(),
            at: crate::ops::id::rfc3339_ms(crate::ops::id::OpId::parse(&id).unwrap().unix_ms())
                .into(),
            check: Some(Box::new(CheckRun {
                hook: hook.into(),
                files: files.iter().map(|f| f.to_string()).collect(),
                failing: failing
                    .iter()
                    .map(|(p, q)| CheckFailure {
                        path: p.to_string(),
                        rule: "r1".into(),
                        quote: q.to_string(),
                    })
                    .collect(),
                clean: failing.is_empty(),
            })),
            ..Record::new(
                "p",
                Actor {
                    kind: ActorKind::Agent,
                    name: "claude-code".into(),
                    session: Some(session.into()),
                },
                Kind::Check,
            )
        }
    }

    #[test]
    fn a_finding_the_next_covering_run_does_not_report_is_caught() {
        let ledger = fold(vec![
            run(
                1,
                "s1",
                "stop",
                &["a.md", "b.md"],
                &[("a.md", "Quick cast"), ("b.md", "Quick cast")],
            ),
            // An edit of a.md covers a.md only: b.md's finding waits.
            run(2, "s1", "edit", &["a.md"], &[]),
            // Another session's run changes nothing here.
            run(3, "s2", "stop", &[], &[]),
            run(4, "s1", "stop", &["b.md"], &[("b.md", "Quick cast")]),
        ]);
        let out = outcomes(&ledger, "s1");
        assert_eq!(out.runs, 3);
        assert_eq!(out.clean_runs, 1);
        assert_eq!(out.caught.len(), 1);
        assert_eq!(out.caught[0].path, "a.md");
        assert_eq!(out.open.len(), 1);
        assert_eq!(out.open[0].path, "b.md");
        assert_eq!(out.review, "kapi context review --session s1");
        assert_eq!(shell_word("a b"), "'a b'");
    }
}
