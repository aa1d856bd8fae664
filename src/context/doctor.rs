//! `kapi store doctor` as a use case: everything wrong with the store that
//! a person may need to act on, by name, with what to do.

use std::path::PathBuf;

use serde::Serialize;

use super::{ContextError, Session};
use crate::ops::fold::Ledger;
use crate::ops::id::OpId;
use crate::ops::record::Record;
use crate::ops::trust::{self, Verdict};
use crate::store::newest::is_ahead;
use crate::store::{RefLock, SetAside};

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `unreadable`, `ignored`, `ahead`, `claim`, `lock`, `leftover`,
    /// `trust` (a line of the allowed-signers file that grants nothing),
    /// `repeat` or `copies` (nothing to do: see [`Diagnosis::clean`]).
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
    /// Operations the fold ignored, repeats of a content address aside.
    pub ignored: usize,
    /// Younger operations repeating an older one's content address: what
    /// two machines that recorded one thing each (a merge signal, the
    /// establishment resting on it) leave once they sync. The older stands;
    /// nothing to do.
    pub repeats: usize,
    pub findings: Vec<Finding>,
    /// Files `--repair` removed.
    pub repaired: Vec<PathBuf>,
}

impl Diagnosis {
    /// Whether anything needs attention (a repeat of a content address
    /// does not: it is how one operation recorded on two machines reads;
    /// nor does an id held in several copies: the fold takes one by a rule
    /// every clone shares, and names it).
    pub fn clean(&self) -> bool {
        self.findings
            .iter()
            .all(|f| f.class == REPEAT || f.class == COPIES)
    }
}

/// The classes of findings that need nothing done.
const REPEAT: &str = "repeat";
const COPIES: &str = "copies";

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
        let message = match store.why_set_aside(line) {
            SetAside::Torn => format!("a line a crash tore, set aside from the journal: {shown}"),
            why => {
                format!("set aside from the journal: {why}; its writer reported it not recorded")
            }
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
    // The allowed-signers file as the fold reads it: a line it cannot use
    // (a key kapi does not verify, a cert-authority line, a typo) grants
    // nothing, and a decision signed by that key is ignored.
    if let (Some(config), Some(trust)) = (&session.config.trust, session.trust()) {
        let file = config.allowed_signers();
        if session.allowed_signers_committed().is_none() {
            add(
                "trust",
                file.to_owned(),
                format!(
                    "[trust] names {file}, which the default branch does not hold: no key is listed, and with decisions = \"signed\" no decision counts. List keys with `kapi trust add`, commit the file and bring it to the default branch"
                ),
            );
        }
        for bad in &trust.signers.bad {
            add(
                "trust",
                format!("{file} line {}", bad.line),
                format!(
                    "{} (the default branch's file; the line grants nothing)",
                    bad.why
                ),
            );
        }
    }
    // Ids that repeat an older operation's content address (records are
    // in id order).
    let mut addresses = std::collections::HashSet::new();
    let repeats: std::collections::HashSet<OpId> = loaded
        .records
        .iter()
        .filter(|r| r.address.as_ref().is_some_and(|a| !addresses.insert(a)))
        .map(|r| r.op_id())
        .collect();
    drop(addresses);
    // Ids held in several copies with other bytes (kept beside each other
    // because one carries a signature; records are in id order): which
    // copy the fold takes is said below, once it has folded.
    let copies: Vec<Vec<Record>> = loaded
        .records
        .chunk_by(|a, b| a.id == b.id)
        .filter(|group| group.len() > 1)
        .map(<[Record]>::to_vec)
        .collect();
    let ledger = session.unfolded(loaded.records).folded();
    for group in &copies {
        let (location, message) = copies_finding(session, &ledger, group);
        d.findings.push(Finding {
            class: COPIES,
            location,
            message,
        });
    }
    for i in &ledger.ignored {
        let repeat = repeats.contains(&i.id);
        if repeat {
            d.repeats += 1;
        } else {
            d.ignored += 1;
        }
        d.findings.push(Finding {
            class: if repeat { REPEAT } else { "ignored" },
            location: i.id.to_string(),
            message: if repeat {
                format!(
                    "{}: recorded on two machines (or twice), the older stands; nothing to do",
                    i.reason
                )
            } else {
                i.reason.clone()
            },
        });
    }
    session.release(ledger);
    Ok(d)
}

/// What doctor says of an id held in several copies: each copy (by the
/// start of its canonical bytes' SHA-256), what its signature says, and
/// which the fold takes and why.
fn copies_finding(session: &Session, ledger: &Ledger, group: &[Record]) -> (String, String) {
    let id = group[0].op_id();
    let taken = ledger.get(&id);
    let trust = session.trust();
    let mut verified = false;
    let mut said = Vec::with_capacity(group.len());
    let mut taken_name = None;
    for copy in group {
        let canonical = copy.to_canonical_json();
        let name = crate::digest::sha256_hex(canonical.as_bytes())[..12].to_owned();
        let signature = match (&copy.sig, trust.as_deref(), trust::wanted(copy)) {
            (None, _, _) => "unsigned".to_owned(),
            (Some(_), Some(trust), Some(vouch)) => match trust.judge(copy, vouch) {
                Verdict::Signed(principal) => {
                    if taken == Some(copy) {
                        verified = true;
                    }
                    format!("its signature verifies for {principal}")
                }
                other => other.reason(vouch),
            },
            (Some(_), Some(_), None) => {
                "signed, though this kind of operation wants no signature".to_owned()
            }
            (Some(_), None, _) => "signed (not verified: kapi.toml has no [trust])".to_owned(),
        };
        if taken == Some(copy) {
            taken_name = Some(name.clone());
        }
        said.push(format!("copy {name}: {signature}"));
    }
    let why = if verified {
        "its signature verifies (a copy that verifies stands, whatever the others hold and whichever arrived first)"
    } else {
        "no copy's signature verifies for it, so the fold takes a signed copy before an unsigned one, then the one whose bytes sort first (the same on every clone)"
    };
    let message = format!(
        "held in {} copies with other bytes, kept beside each other because one carries a signature ({}); the fold takes copy {}: {why}. Nothing to do",
        group.len(),
        said.join("; "),
        taken_name.as_deref().unwrap_or("none"),
    );
    (format!("operation {id}"), message)
}
