//! `kapi store doctor` as a use case: everything wrong with the store that
//! a person may need to act on, by name, with what to do.

use std::path::PathBuf;

use serde::Serialize;

use super::{ContextError, Session};
use crate::ops::id::OpId;
use crate::store::newest::is_ahead;
use crate::store::{RefLock, segment};

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `unreadable`, `ignored`, `ahead`, `claim`, `lock`, `leftover`.
    pub class: &'static str,
    /// Where: an operation, a segment line, a file.
    pub location: String,
    pub message: String,
}

/// What the doctor found (and, with repair, removed).
#[derive(Debug, Default, Serialize)]
pub struct Diagnosis {
    pub operations: usize,
    pub unreadable: usize,
    pub ignored: usize,
    pub findings: Vec<Finding>,
    /// Files `--repair` removed.
    pub repaired: Vec<PathBuf>,
}

impl Diagnosis {
    /// Whether anything needs attention.
    pub fn clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Read both logs whole and look at the store; with `repair`, first remove
/// kapi's abandoned ref locks and the temporary files killed writers left.
pub fn doctor(session: &Session, repair: bool) -> Result<Diagnosis, ContextError> {
    let store = &session.store;
    let mut d = Diagnosis::default();
    if repair {
        d.repaired = store.repair()?;
    }
    let loaded = store.load_all()?;
    let rejected = store.rejected_journal_lines();
    let health = store.health()?;
    d.operations = loaded.records.len();
    d.unreadable = crate::store::segment::unreadable(&loaded.problems) + rejected.len();
    let mut add = |class, location: String, message: String| {
        d.findings.push(Finding {
            class,
            location,
            message,
        })
    };
    for p in &loaded.problems {
        add("unreadable", p.location.clone(), p.error.to_string());
    }
    for (n, line) in rejected.iter().enumerate() {
        let shown: String = String::from_utf8_lossy(line).chars().take(80).collect();
        let message = match segment::line_id(line) {
            Some(id) if crate::ops::record::Record::from_untrusted(line).is_ok() => format!(
                "{id} was set aside from the journal: its segment had no room; its writer reported it not recorded"
            ),
            _ => format!("a line a crash tore, set aside from the journal: {shown}"),
        };
        add(
            "unreadable",
            format!(".git/kapi/journal.rejected line {}", n + 1),
            message,
        );
    }
    // Against the earlier of the pinned clock and the system's: a
    // `KAPI_NOW` set ahead cannot hide an operation dated ahead.
    let now = session.now_ms()?.min(session.env().wall_ms());
    for r in loaded.records.iter().filter(|r| is_ahead(&r.id, now)) {
        add(
            "ahead",
            format!("operation {}", r.id),
            crate::store::EntryError::Ahead {
                id: r.id.to_string(),
                at: r.at.to_string(),
            }
            .to_string(),
        );
    }
    for (which, claim) in &health.claims {
        let held = OpId::parse(claim)
            .ok()
            .filter(|id| loaded.records.iter().any(|r| r.id == id.as_str()));
        let problem = match held {
            None => Some("names an operation the log does not hold"),
            Some(id) if is_ahead(id.as_str(), now) => {
                Some("names an operation dated more than 10 minutes past this machine's clock")
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            add(
                "claim",
                format!("{} tip", which.name()),
                format!(
                    "the tip commit's message says `newest: {claim}`, which {problem}; kapi ignores it (new ids are minted past the operations the log holds). Nothing to do"
                ),
            );
        }
    }
    for (which, target) in &health.odd_tips {
        add(
            "ref",
            which.name().to_owned(),
            format!(
                "points at {target}, which is not a commit of the log; it holds no operations for kapi, and the next write starts the log afresh there. If the log was there before, point the ref back at its last commit (`git reflog {}`)",
                which.name()
            ),
        );
    }
    for lock in &health.ref_locks {
        match lock {
            RefLock::Abandoned(path) => add(
                "lock",
                path.display().to_string(),
                "a ref lock a killed kapi writer left behind; the next write removes it, or run `kapi store doctor --repair`".to_owned(),
            ),
            RefLock::Foreign(path) => add(
                "lock",
                path.display().to_string(),
                "a ref lock kapi did not write: another program (git?) is moving the ref, or died doing so. If no git command is running in this repository, remove the file".to_owned(),
            ),
        }
    }
    for path in &health.leftovers {
        add(
            "leftover",
            path.display().to_string(),
            "a temporary file a killed writer left; the next write removes it, or run `kapi store doctor --repair`".to_owned(),
        );
    }
    let ledger = crate::ops::Ledger::new(loaded.records)
        .with_axes(session.axes())
        .folded();
    d.ignored = ledger.ignored.len();
    for i in &ledger.ignored {
        d.findings.push(Finding {
            class: "ignored",
            location: i.id.clone(),
            message: i.reason.clone(),
        });
    }
    session.release(ledger);
    Ok(d)
}
