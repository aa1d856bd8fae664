//! `kapi context atlas`: the project's whole context in one document —
//! every rule, note and pair with its history, coordinates and derived
//! axes; every operation as an event on the recorded clock; every window
//! boundary as an event on the effective clock; the project's typed axes
//! and the gazetteer places its geo values name. The document is a
//! contract with the views that draw it, specified in `docs/atlas.md`;
//! [`ATLAS_VERSION`] changes when a field changes meaning or goes away.
//!
//! On request ([`AtlasRequest`]) it covers every repository the workspace
//! registry lists, each subject and event naming its project (read
//! through [`super::workspace::atlas`], within bounds: another checkout is
//! untrusted), and content cells counting the project's prose files by
//! collection, language and state ([`super::content`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::check::CheckError;
use super::content::CellDoc;
use super::workspace::atlas::ProjectDoc;
use super::{ContextError, Session};
use crate::ops::axes::{Axis, Place, Space};
use crate::ops::history::{Change, Histories};
use crate::ops::id::rfc3339_ms;
use crate::ops::record::{Record, Scope, Subject};
use crate::ops::scope::parse_bound;
use crate::ops::{OpId, Status};

/// The version of the atlas document (`"atlas"` in it).
pub const ATLAS_VERSION: u32 = 1;

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Atlas {
    pub atlas: u32,
    pub project: String,
    /// The instant the atlas was read at (the call's clock).
    pub generated_at: String,
    /// The instant the log was read as of (`--as-of`), when not now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    pub axes: Vec<AxisDoc>,
    pub subjects: Vec<SubjectDoc>,
    pub events: Vec<EventDoc>,
    pub windows: Vec<WindowDoc>,
    pub places: Vec<PlaceDoc>,
    /// What the document covers: `project`, or `workspace` (every
    /// repository the registry lists).
    pub covers: &'static str,
    /// With `--workspace`: every registered repository, read or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projects: Option<Vec<ProjectDoc>>,
    /// With `--content`: the project's prose files counted by collection,
    /// language and state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells: Option<Vec<CellDoc>>,
}

/// What an atlas covers beyond the project's context.
#[derive(Debug, Clone, Copy, Default)]
pub struct AtlasRequest {
    /// Every repository the workspace registry lists, not only this one.
    pub workspace: bool,
    /// Content cells: the project's prose files by collection, language
    /// and state.
    pub content: bool,
    /// The log as it stood at this instant (Unix ms; `None`: now).
    pub as_of: Option<u64>,
}

/// A typed axis of the project.
#[derive(Debug, Serialize)]
pub struct AxisDoc {
    pub name: String,
    /// `enum`, `range` or `geo`.
    pub kind: &'static str,
    /// For `enum` and `geo`: each value and the values directly containing it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ValueDoc>,
}

#[derive(Debug, Serialize)]
pub struct ValueDoc {
    pub value: String,
    pub within: Vec<String>,
}

/// A rule, note, pair or correction, with its history.
#[derive(Debug, Serialize)]
pub struct SubjectDoc {
    pub id: OpId,
    pub short: String,
    /// `rule`, `note`, `pair` or `correction`.
    pub family: &'static str,
    pub operation: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correction: Option<Value>,
    pub status: Status,
    pub advisory: bool,
    pub contested_by: Vec<OpId>,
    /// The point it holds at (after any widen): axis → value.
    pub coordinates: BTreeMap<String, String>,
    pub window: WindowBounds,
    pub derived: Derived,
    pub recorded_at: String,
    pub actor: Value,
    pub history: Vec<Change>,
}

#[derive(Debug, Serialize)]
pub struct WindowBounds {
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
}

/// Axes every record has, derived from what it is and where it holds.
#[derive(Debug, Serialize)]
pub struct Derived {
    pub family: &'static str,
    /// `<kind>:<name>` of who recorded it: `agent:claude-code`.
    pub actor: String,
    /// The `locale` coordinate, if it has one.
    pub locale: Option<String>,
    /// The outermost gazetteer place containing its geo coordinate, else
    /// the region of its locale (`nb-NO` → `NO`).
    pub region: Option<String>,
    /// The project whose log records it, when the atlas covers the
    /// workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// An operation, on the recorded clock (when the log accepted it).
#[derive(Debug, Serialize)]
pub struct EventDoc {
    pub clock: &'static str,
    pub at: String,
    pub id: OpId,
    pub kind: &'static str,
    pub actor: String,
    /// The subject it states or acts on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Why the fold ignored it, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
    /// Whose signature on it verified against the allowed signers
    /// (docs/security.md, "Signed decisions"), if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// The project whose log holds it, when the atlas covers the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// A window boundary, on the effective clock (when a rule starts or stops
/// holding).
#[derive(Debug, Serialize)]
pub struct WindowDoc {
    pub clock: &'static str,
    pub at: String,
    pub subject: OpId,
    /// `valid_from` (it starts holding) or `valid_to` (it stops).
    pub bound: &'static str,
    /// The bound as recorded (a date or an instant).
    pub recorded: String,
    /// The project of the subject, when the atlas covers the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// A gazetteer place a geo coordinate names, or one containing it.
#[derive(Debug, Serialize)]
pub struct PlaceDoc {
    pub axis: String,
    #[serde(flatten)]
    pub place: Place,
}

/// Read the whole context of the session's project as the log stood at
/// `as_of` (Unix ms; `None` for now).
pub fn atlas_as_of(session: &Session, as_of: Option<u64>) -> Result<Atlas, ContextError> {
    let histories = read(session, as_of)?;
    let atlas = build(session, &histories, as_of);
    session.release(histories);
    atlas
}

/// The histories the atlas is drawn from, as of `as_of`.
pub(crate) fn read(session: &Session, as_of: Option<u64>) -> Result<Histories, ContextError> {
    Ok(session.histories_as_of(as_of)?.0)
}

/// The atlas of `histories` (read by [`read`] as of `as_of`).
pub(crate) fn build(
    session: &Session,
    histories: &Histories,
    as_of: Option<u64>,
) -> Result<Atlas, ContextError> {
    let mut parts = Parts::default();
    parts.add(histories, &session.space, None);
    let mut doc = document(session, parts)?;
    doc.as_of = as_of.map(rfc3339_ms);
    Ok(doc)
}

/// Read the atlas as `request` asks: the project's context, or every
/// registered repository's, with content cells or without.
pub fn atlas_with(session: &Session, request: AtlasRequest) -> Result<Atlas, CheckError> {
    if !request.workspace && !request.content {
        return Ok(atlas_as_of(session, request.as_of)?);
    }
    let mut parts = Parts::default();
    let (histories, unreadable) = session.histories_as_of(request.as_of)?;
    let tag = request.workspace.then(|| session.project.clone());
    parts.add(&histories, &session.space, tag);
    let this = ProjectDoc {
        project: session.project.clone(),
        repository: session
            .root
            .canonicalize()
            .unwrap_or_else(|_| session.root.clone()),
        this: true,
        operations: histories.ledger.records().len(),
        unreadable,
        skipped: None,
    };
    session.release(histories);
    let mut projects = None;
    if request.workspace {
        let others = super::workspace::atlas::read(session, this);
        // Another project's coordinates compare by equality: its kapi.toml
        // (a file of a checkout kapi did not write) is never read here.
        let plain = Space::default();
        for other in &others.read {
            parts.add(&other.histories, &plain, Some(other.project.clone()));
        }
        // Stable: where two logs hold one id, this project's comes first,
        // then the others' in the registry's order.
        parts.subjects.sort_by_key(|s| s.id);
        parts.events.sort_by_key(|e| e.id);
        parts
            .windows
            .sort_by(|a, b| (&a.at, a.subject).cmp(&(&b.at, b.subject)));
        projects = Some(others.projects);
    }
    let cells = if request.content {
        Some(super::content::cells(session)?)
    } else {
        None
    };
    let mut doc = document(session, parts)?;
    if request.workspace {
        doc.covers = "workspace";
    }
    doc.projects = projects;
    doc.cells = cells;
    Ok(doc)
}

/// The subjects, events, windows and places of the logs read so far.
#[derive(Default)]
struct Parts {
    subjects: Vec<SubjectDoc>,
    events: Vec<EventDoc>,
    windows: Vec<WindowDoc>,
    places: BTreeMap<(String, String), Place>,
}

impl Parts {
    /// Add one folded log, its records read on `space`'s axes; `project`
    /// names it on every record when the atlas covers the workspace.
    fn add(&mut self, histories: &Histories, space: &Space, project: Option<String>) {
        let ledger = &histories.ledger;
        let ignored: BTreeMap<&str, &str> = ledger
            .ignored
            .iter()
            .map(|i| (i.id.as_str(), i.reason.as_str()))
            .collect();
        let mut windows = Vec::new();
        for (record, state) in ledger.iter() {
            let Some(state) = state else { continue };
            let family = family(record);
            let coordinates = state.scope.point.clone();
            for (axis_name, value) in &coordinates {
                if let Some(axis) = space.axis(axis_name) {
                    for p in axis.places(value) {
                        self.places
                            .entry((axis_name.clone(), p.id.clone()))
                            .or_insert_with(|| p.clone());
                    }
                }
            }
            windows.extend(
                window_events(record.op_id(), &state.scope)
                    .into_iter()
                    .map(|w| WindowDoc {
                        project: project.clone(),
                        ..w
                    }),
            );
            self.subjects.push(SubjectDoc {
                id: record.op_id(),
                short: record.short().to_owned(),
                family,
                operation: record.kind.as_str(),
                subject: record.subject.as_deref().cloned(),
                correction: record
                    .correction
                    .as_deref()
                    .map(|c| json!({"from": c.from, "to": c.to})),
                status: state.status,
                advisory: state.advisory,
                contested_by: state.contested_by.clone(),
                derived: Derived {
                    family,
                    actor: actor(record),
                    locale: coordinates.get("locale").cloned(),
                    region: region(space, &coordinates),
                    project: project.clone(),
                },
                coordinates,
                window: WindowBounds {
                    valid_from: state.scope.valid_from.clone(),
                    valid_to: state.scope.valid_to.clone(),
                },
                recorded_at: record.op_id().instant(),
                actor: serde_json::to_value(&record.actor).unwrap_or(Value::Null),
                history: histories.of(&record.op_id()).to_vec(),
            });
        }
        windows.sort_by(|a, b| (&a.at, a.subject).cmp(&(&b.at, b.subject)));
        self.windows.extend(windows);
        self.events.extend(ledger.records().iter().map(|r| {
            EventDoc {
                clock: "recorded",
                at: r.op_id().instant(),
                id: r.op_id(),
                kind: r.kind.as_str(),
                actor: actor(r),
                subject: r
                    .target
                    .as_deref()
                    .or_else(|| r.subject.is_some().then_some(r.id.as_str()))
                    .map(str::to_owned),
                ignored: ignored.get(r.id.as_str()).map(|s| s.to_string()),
                signed_by: ledger.signed_by(&r.id).map(str::to_owned),
                project: project.clone(),
            }
        }));
    }
}

/// The document around what was read: the project's typed axes, the clock.
fn document(session: &Session, parts: Parts) -> Result<Atlas, ContextError> {
    let axes = session
        .space
        .axes()
        .map(|(name, axis)| AxisDoc {
            name: name.to_owned(),
            kind: axis.kind(),
            values: axis
                .values()
                .into_iter()
                .map(|(v, w)| ValueDoc {
                    value: v.to_owned(),
                    within: w.to_vec(),
                })
                .collect(),
        })
        .collect();
    Ok(Atlas {
        atlas: ATLAS_VERSION,
        project: session.project.clone(),
        generated_at: rfc3339_ms(session.now_ms()?),
        as_of: None,
        axes,
        subjects: parts.subjects,
        events: parts.events,
        windows: parts.windows,
        places: parts
            .places
            .into_iter()
            .map(|((axis, _), place)| PlaceDoc { axis, place })
            .collect(),
        covers: "project",
        projects: None,
        cells: None,
    })
}

fn family(record: &Record) -> &'static str {
    match record.subject.as_deref() {
        Some(Subject::Term { .. } | Subject::Terms { .. }) => "rule",
        Some(Subject::Note { .. }) => "note",
        Some(Subject::Pair { .. }) => "pair",
        None => "correction",
    }
}

fn actor(record: &Record) -> String {
    format!("{}:{}", record.actor.kind.as_str(), record.actor.name)
}

/// The outermost place containing a geo coordinate, else the region
/// subtag of the locale.
fn region(space: &Space, coordinates: &BTreeMap<String, String>) -> Option<String> {
    let geo = coordinates.iter().find_map(|(name, value)| {
        let axis: &Axis = space.axis(name)?;
        axis.outermost(value).first().map(|s| s.to_string())
    });
    geo.or_else(|| {
        let locale = coordinates.get("locale")?;
        locale
            .split(['-', '_'])
            .skip(1)
            .find(|part| part.len() == 2 && part.chars().all(|c| c.is_ascii_alphabetic()))
            .map(str::to_ascii_uppercase)
    })
}

/// The window of `scope` as events on the effective clock.
fn window_events(subject: OpId, scope: &Scope) -> Vec<WindowDoc> {
    let mut out = Vec::new();
    for (bound, text) in [
        ("valid_from", scope.valid_from.as_ref()),
        ("valid_to", scope.valid_to.as_ref()),
    ] {
        let Some(text) = text else { continue };
        let Ok(ms) = parse_bound(text) else { continue };
        let Ok(ms) = u64::try_from(ms) else { continue };
        out.push(WindowDoc {
            clock: "effective",
            at: rfc3339_ms(ms),
            subject,
            bound,
            recorded: text.clone(),
            project: None,
        });
    }
    out
}
