//! `kapi context note`: what an assistant (or a person) noticed — a term
//! rule, a note in prose, a content-memory pair, a person's change of
//! wording — or the withdrawal of the caller's own suggestion.

use std::path::PathBuf;

use serde::Serialize;

use super::door::Recorded;
use super::{ContextError, Session};
use crate::ops::Status;
use crate::ops::axes::Space;
use crate::ops::forms::avoided_forms;
use crate::ops::id::resolve;
use crate::ops::record::{ActorKind, Correction, Evidence, Kind, Record, Scope, Subject};
use crate::ops::scope::{Point, check_window, parse_point};
use crate::ops::{Draft, Drafted};

/// What is being recorded.
#[derive(Debug, Clone)]
pub enum NoteWhat {
    /// A term rule: the form to use and the forms named instead.
    Term {
        term: String,
        instead_of: Vec<String>,
    },
    /// A fact in prose.
    Prose { text: String },
    /// A content-memory pair: the rendering (`target`) kept for a phrase
    /// (`source`), e.g. at a locale's point.
    Pair { source: String, target: String },
    /// A person's change of wording, and optionally the rule it implies.
    Correction {
        from: String,
        to: String,
        suggest: bool,
    },
    /// Take back one of the caller's own suggestions (an id or a prefix).
    Withdraw { target: String },
}

#[derive(Debug, Clone)]
pub struct NoteRequest {
    pub what: NoteWhat,
    pub path: Option<String>,
    pub quote: Option<String>,
    pub unit: Option<String>,
    /// `axis=value` pairs that narrow the evidence's point.
    pub point: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    pub note: Option<String>,
}

/// Axes that come from the file the evidence is in (the profile too: the
/// `[[points]]` entry naming it for the file's path).
const FILE_AXES: [&str; 3] = ["product", "channel", "profile"];

/// What a note recorded, and the rules files it refreshed.
#[derive(Debug, Serialize)]
pub struct Noted {
    pub record: Record,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// Why refreshing them failed, after the change was recorded: a
    /// surface shows what was recorded, then this.
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

impl Noted {
    /// What was recorded, in words: the subject, a correction `"from" →
    /// "to"`, or the withdrawn operation `#0n79tw5k9s`.
    pub fn describe(&self) -> String {
        let record = &self.record;
        match (record.subject.as_deref(), &record.correction) {
            (Some(subject), _) => subject.describe(),
            (None, Some(c)) => format!("\"{}\" → \"{}\"", c.from, c.to),
            (None, None) => record
                .target
                .as_deref()
                .map(|t| format!("#{}", crate::ops::id::short(t)))
                .unwrap_or_default(),
        }
    }

    /// Whether it stands as a suggestion until a person keeps it.
    pub fn suggests(&self) -> bool {
        matches!(self.record.kind, Kind::Observe | Kind::Correct) && self.record.subject.is_some()
    }
}

/// Record a note, a correction or a withdrawal. A person's correction can
/// contest a rule in force, so the rules files are refreshed to stop
/// listing it (suggestions change nothing in force).
pub fn note(session: &Session, req: NoteRequest) -> Result<Noted, ContextError> {
    let Recorded {
        mut records,
        refreshed,
        refresh_error,
    } = record_note(session, req)?;
    Ok(Noted {
        record: records.pop().expect("one draft, one record"),
        refreshed,
        refresh_error,
    })
}

fn record_note(session: &Session, req: NoteRequest) -> Result<Recorded, ContextError> {
    if let NoteWhat::Withdraw { target } = &req.what {
        return withdraw(session, target, req.note.clone());
    }
    let path = req
        .path
        .as_deref()
        .map(|p| super::work_tree_path(session, p))
        .transpose()?;
    let states_rule = matches!(
        req.what,
        NoteWhat::Term { .. } | NoteWhat::Correction { .. } | NoteWhat::Pair { .. }
    );
    if states_rule && path.is_none() && req.quote.as_deref().is_none_or(|q| q.trim().is_empty()) {
        return Err(ContextError::Usage(
            "evidence is required: name the file it was seen in (--path) or quote it (--quote)"
                .into(),
        ));
    }
    let what = match req.what {
        NoteWhat::Term { term, instead_of } => {
            let avoid = avoided_forms(&term, &instead_of)?;
            Rule::Observe(Subject::Term {
                preferred: term.split_whitespace().collect::<Vec<_>>().join(" "),
                avoid,
            })
        }
        NoteWhat::Prose { text } => {
            if text.trim().is_empty() {
                return Err(ContextError::Usage("the note is empty".into()));
            }
            Rule::Observe(Subject::Note {
                text: text.trim().to_owned(),
            })
        }
        NoteWhat::Pair { source, target } => Rule::Observe(pair(&source, &target)?),
        NoteWhat::Correction { from, to, suggest } => {
            if from.trim().is_empty() || to.trim().is_empty() || from == to {
                return Err(ContextError::Usage(
                    "a correction needs different --from and --to wording".into(),
                ));
            }
            let (from, to) = (normalize(&from), normalize(&to));
            // An agent's account of a person's change is a person signal:
            // recorded only where git shows the change. A person is
            // trusted for their own words.
            if session.actor().kind == ActorKind::Agent {
                super::corroborate::corroborate(session, path.as_deref(), &from, &to)?;
            }
            let rule = match suggest {
                true => Some(Subject::Term {
                    preferred: to.clone(),
                    avoid: avoided_forms(&to, std::slice::from_ref(&from))?,
                }),
                false => None,
            };
            Rule::Correct(Correction { from, to }, rule)
        }
        NoteWhat::Withdraw { .. } => unreachable!("handled above"),
    };
    let scope = scope(
        session,
        path.as_deref(),
        &req.point,
        req.valid_from,
        req.valid_to,
    )?;
    let mut evidence = Vec::new();
    if path.is_some() || req.quote.is_some() || req.unit.is_some() {
        evidence.push(Evidence {
            path,
            unit: req.unit,
            quote: req.quote,
            sha256: None,
        });
    }
    let drafted = match what {
        Rule::Observe(subject) => Drafted::Observe {
            subject,
            scope,
            evidence,
        },
        Rule::Correct(correction, rule) => Drafted::Correct {
            correction,
            rule,
            scope,
            evidence,
        },
    };
    session.record(
        vec![Draft::from(drafted).noting(req.note.filter(|n| !n.trim().is_empty()))],
        None,
    )
}

/// What a note states, before its scope and evidence are known.
enum Rule {
    Observe(Subject),
    Correct(Correction, Option<Subject>),
}

fn withdraw(
    session: &Session,
    target: &str,
    note: Option<String>,
) -> Result<Recorded, ContextError> {
    let ledger = session.ledger()?;
    let ids = ledger.ids();
    let id = resolve(target, &ids)?;
    // What no longer answers has nothing to take back, whoever asks (and
    // no one can drop it either, so no drop is offered). Whether this
    // actor may take it back, and whether it is still a suggestion, the
    // door decides.
    match ledger.state(id).map(|s| s.status) {
        Some(status @ (Status::Withdrawn | Status::Dropped)) => {
            return Err(ContextError::Refused(format!(
                "refusing to withdraw #{}: it is already {}; there is nothing to withdraw",
                id.short(),
                status.as_str()
            )));
        }
        Some(Status::Reset) => {
            return Err(ContextError::Refused(format!(
                "refusing to withdraw #{}: a reset set it aside; there is nothing to withdraw",
                id.short()
            )));
        }
        _ => {}
    }
    let draft = Draft::from(Drafted::Withdraw { target: *id }).noting(note);
    session.record_deciding(vec![draft], ledger)
}

/// The scope of a submission: the evidence's point, narrowed by `--point`,
/// and the window.
fn scope(
    session: &Session,
    path: Option<&str>,
    narrow: &[String],
    valid_from: Option<String>,
    valid_to: Option<String>,
) -> Result<Scope, ContextError> {
    let points = super::PointMap::from_config(&session.config.points)?;
    let mut point: Point = match path {
        Some(p) => points.point(p),
        None => Point::new(),
    };
    let seen = path.unwrap_or("the evidence");
    for (axis, value) in parse_point(narrow)? {
        if FILE_AXES.contains(&axis.as_str()) {
            let setting = match path.and_then(|p| Some((p, points.entry_setting(p, &axis)?))) {
                Some((p, (n, globs))) => format!(
                    "for {p} it is set by [[points]] entry {n} (paths = {globs:?}) in kapi.toml"
                ),
                None => format!(
                    "no [[points]] entry in kapi.toml sets it for {seen}; add one whose paths match the file"
                ),
            };
            return Err(ContextError::Usage(format!(
                "--point cannot set {axis}: it comes from the file the evidence is in; {setting}"
            )));
        }
        let typed = session.space.axis(&axis);
        if let Some(typed) = typed
            && !typed.legal(&value)
        {
            return Err(ContextError::Usage(format!(
                "--point {axis}={value}: `{value}` is not a value of the {} axis {axis} in kapi.toml (expected {})",
                typed.kind(),
                typed.expects()
            )));
        }
        if let Some(current) = point.get(&axis)
            && !Space::contains(Some(&session.space), &axis, current, &value)
        {
            return Err(ContextError::Usage(format!(
                "--point can only narrow where the evidence was seen: {seen} is at {axis}={current}, and {axis}={value} is not within it; only a person applies a rule more widely, in review (`kapi context review --keep <id> --widen-to {axis}`)"
            )));
        }
        point.insert(axis, value);
    }
    check_window(valid_from.as_deref(), valid_to.as_deref())?;
    Ok(Scope {
        point,
        valid_from,
        valid_to,
        workspace: false,
    })
}

/// A content-memory pair from a phrase and its rendering: both non-empty
/// and different once whitespace is collapsed.
pub(crate) fn pair(source: &str, target: &str) -> Result<Subject, ContextError> {
    let (source, target) = (normalize(source), normalize(target));
    if source.is_empty() || target.is_empty() {
        return Err(ContextError::Usage(
            "a pair needs a phrase (--pair) and its rendering (--target), neither empty".into(),
        ));
    }
    if source == target {
        return Err(ContextError::Usage(format!(
            "the pair renders \"{source}\" as itself: give a different --target"
        )));
    }
    Ok(Subject::Pair { source, target })
}

/// Collapse runs of whitespace and trim, as avoided forms are.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
