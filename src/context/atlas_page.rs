//! `kapi context atlas --html`: the atlas as one self-contained web page
//! (docs/atlas.md, "The page"). The page's markup, styles and script are
//! files beside this one (`atlas_page/`), included at build time; the data
//! is the atlas document, the review digest and where the log stood,
//! embedded as JSON in a `<script type="application/json">` block that the
//! script reads with `JSON.parse` and renders as text, never as markup.
//!
//! Everything in the data comes from the log, and the log is hostile (a
//! rule's text may hold `</script>` or markup): the JSON is escaped so no
//! `<`, `>` or `&` appears in it raw (nothing in it can close the block or
//! open a comment), with U+2028 and U+2029 escaped too. A Content Security
//! Policy names the page's one script and one style by their SHA-256: no
//! other script runs and nothing is fetched from anywhere.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::atlas::{Atlas, build, read};
use super::decisions::Decision;
use super::review::{Pending, pending_from};
use super::{ContextError, Disagreement, Session, disagreements_at};
use crate::ops::id::rfc3339_ms;

const TEMPLATE: &str = include_str!("atlas_page/page.html");
const STYLE: &str = include_str!("atlas_page/page.css");
const SCRIPT: &str = include_str!("atlas_page/page.js");

/// The version of the page's data (`"page"` in it).
pub const PAGE_VERSION: u32 = 1;

/// What the page draws: the atlas, the digest, and where the log stood.
/// [`render`] embeds it with the atlas's events packed ([`PackedAtlas`]).
#[derive(Debug)]
pub struct PageData {
    pub page: u32,
    /// The kapi that made it.
    pub kapi: &'static str,
    /// The instant it was made (the call's clock).
    pub made_at: String,
    /// The instant the log was read as of, when not now.
    pub as_of: Option<String>,
    pub tip: Tip,
    pub digest: DigestDoc,
    pub atlas: Atlas,
}

/// Where the log stood: the commits its refs point at, and the newest
/// operation the page holds.
#[derive(Debug, Serialize)]
pub struct Tip {
    /// `refs/kapi/ops`, the shared log.
    pub ops: Option<String>,
    /// `refs/kapi/local`, this machine's check runs.
    pub local: Option<String>,
    /// The newest operation the atlas holds (at `as_of`, the newest by then).
    pub last: Option<LastOp>,
}

#[derive(Debug, Serialize)]
pub struct LastOp {
    pub id: String,
    pub at: String,
}

/// The review digest as the page shows it.
#[derive(Debug, Serialize)]
pub struct DigestDoc {
    /// What awaits a person, each with the commands that decide it.
    pub awaiting: Vec<Awaiting>,
    /// How many rules and notes are in force and await nothing.
    pub in_force: usize,
    /// Each digest item's standing (`seen in 2 sessions`), by the id of
    /// every operation that states it.
    pub standing: BTreeMap<String, String>,
    /// Imported rules in force that disagree.
    pub disagreeing: Vec<Disagreement>,
}

/// An item awaiting a decision, as the digest shows it.
#[derive(Debug, Serialize)]
pub struct Awaiting {
    pub id: String,
    pub short: String,
    pub status: crate::ops::Status,
    /// The subject in words: `"Quickcast", not "Quick cast"`.
    pub subject: String,
    /// Who recorded it.
    pub actor: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing: Option<String>,
    /// Where it holds: `in the project at place=oslo`, when not everywhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#where: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contested_by: Vec<String>,
    /// The other operations that state the rule: `#short (actor)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// The commands that take each decision the item takes.
    pub commands: Vec<Command>,
}

impl Awaiting {
    fn of(item: &Pending) -> Self {
        let scope = &item.scope;
        let r#where = (!scope.point.is_empty() || scope.workspace).then(|| {
            let across = if scope.workspace {
                "across the workspace"
            } else {
                "in the project"
            };
            let at = crate::ops::scope::pairs(&scope.point);
            if at.is_empty() {
                across.to_owned()
            } else {
                format!("{across} at {}", at.join(", "))
            }
        });
        Awaiting {
            id: item.id.to_string(),
            short: item.short.clone(),
            status: item.status,
            subject: item.subject.clone(),
            actor: item.actor.clone(),
            standing: item.standing.clone(),
            r#where,
            contested_by: item.contested_by.iter().map(|c| c.to_string()).collect(),
            also: item
                .members
                .iter()
                .skip(1)
                .map(|m| format!("#{} ({})", m.short, m.actor))
                .collect(),
            commands: commands(item),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Command {
    /// `keep`, `drop`, `choose` or `widen`.
    pub decision: &'static str,
    /// The command line, to copy.
    pub line: String,
}

/// Read the page's data: the atlas and the digest of the log as of `as_of`
/// (Unix ms; `None` for now), from one read of the log.
pub fn page_data(session: &Session, as_of: Option<u64>) -> Result<PageData, ContextError> {
    let histories = read(session, as_of)?;
    let atlas = build(session, &histories, as_of)?;
    let ledger = &histories.ledger;
    let at = match as_of {
        Some(at) => at,
        None => session.now_ms()?,
    };
    // Shared by the team: nobody is "you" on the page.
    let items = pending_from(ledger, None, None);
    let mut standing = BTreeMap::new();
    for p in &items {
        if let Some(s) = &p.standing {
            standing.insert(p.id.to_string(), s.clone());
            for m in &p.members {
                standing.insert(m.id.to_string(), s.clone());
            }
        }
    }
    let in_force = items.iter().filter(|p| !p.awaiting).count();
    let awaiting = items
        .into_iter()
        .filter(|p| p.awaiting)
        .map(|item| Awaiting::of(&item))
        .collect();
    let disagreeing = disagreements_at(ledger, i64::try_from(at).unwrap_or(i64::MAX));
    let [ops, local] = session.store.tips().unwrap_or([None, None]);
    let last = ledger.records().last().map(|r| LastOp {
        id: r.id.to_string(),
        at: r.op_id().instant(),
    });
    Ok(PageData {
        page: PAGE_VERSION,
        kapi: env!("CARGO_PKG_VERSION"),
        made_at: atlas.generated_at.clone(),
        as_of: as_of.map(rfc3339_ms),
        tip: Tip {
            ops: ops.map(|c| c.to_string()),
            local: local.map(|c| c.to_string()),
            last,
        },
        digest: DigestDoc {
            awaiting,
            in_force,
            standing,
            disagreeing,
        },
        atlas,
    })
}

/// The command line of each decision `item` takes, as the digest offers
/// them (`Decision::on`, `Decision::round`). A widening is offered to the
/// whole project for what holds at a point; beyond the project (the
/// workspace) is a person's to type.
fn commands(item: &Pending) -> Vec<Command> {
    let id = &item.short;
    Decision::on(item)
        .into_iter()
        .filter(|d| *d != Decision::Widen || !item.scope.point.is_empty())
        .map(|d| {
            let (decision, line) = match d {
                Decision::Keep => ("keep", format!("kapi context review --keep {id}")),
                // The person's own form goes where FORM stands.
                Decision::Replace => (
                    "replace",
                    format!("kapi context review --keep {id} --replace-use FORM"),
                ),
                Decision::Drop => ("drop", format!("kapi context review --drop {id}")),
                Decision::Choose => ("choose", format!("kapi context review --choose {id}")),
                Decision::Widen => {
                    let verb = if item.keepable { "--keep" } else { "--widen" };
                    (
                        "widen",
                        format!("kapi context review {verb} {id} --widen-to project"),
                    )
                }
            };
            Command { decision, line }
        })
        .collect()
}

/// The data as the page holds it: [`PageData`] with the atlas's events
/// packed.
#[derive(Serialize)]
struct Embedded<'a> {
    page: u32,
    kapi: &'static str,
    made_at: &'a str,
    as_of: &'a Option<String>,
    tip: &'a Tip,
    digest: &'a DigestDoc,
    atlas: PackedAtlas<'a>,
}

/// The atlas document with its `events` packed: most of a long log is
/// events (usage signals, check runs), and the page loads in proportion
/// to its bytes. Every other field is the document's own (docs/atlas.md).
#[derive(Serialize)]
struct PackedAtlas<'a> {
    atlas: u32,
    project: &'a str,
    generated_at: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    as_of: Option<&'a str>,
    axes: &'a [super::atlas::AxisDoc],
    subjects: &'a [super::atlas::SubjectDoc],
    events: PackedEvents<'a>,
    windows: &'a [super::atlas::WindowDoc],
    places: &'a [super::atlas::PlaceDoc],
}

/// The events as columns, one entry per event in log order: `id`; `at`,
/// the Unix milliseconds since the event before (the first since 1970);
/// `kind` and `actor`, indexes into `kinds` and `actors`; `subject`, the
/// index in `subjects` of the subject it states or acts on, or -1 (`other`
/// then names a target that is not a subject, by the event's index);
/// `ignored`, why the fold ignored an event, and `signed`, whose signature
/// on it verified, by its index.
#[derive(Serialize, Default)]
struct PackedEvents<'a> {
    kinds: Vec<&'static str>,
    actors: Vec<&'a str>,
    id: Vec<&'a str>,
    at: Vec<i64>,
    kind: Vec<usize>,
    actor: Vec<usize>,
    subject: Vec<i64>,
    other: BTreeMap<usize, &'a str>,
    ignored: BTreeMap<usize, &'a str>,
    signed: BTreeMap<usize, &'a str>,
}

fn pack(atlas: &Atlas) -> PackedEvents<'_> {
    let subjects: std::collections::HashMap<&str, i64> = atlas
        .subjects
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i as i64))
        .collect();
    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut actors: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out = PackedEvents::default();
    let mut last: i64 = 0;
    for (i, e) in atlas.events.iter().enumerate() {
        let kind = *kinds.entry(e.kind).or_insert_with(|| {
            out.kinds.push(e.kind);
            out.kinds.len() - 1
        });
        let actor = *actors.entry(e.actor.as_str()).or_insert_with(|| {
            out.actors.push(e.actor.as_str());
            out.actors.len() - 1
        });
        let at = i64::try_from(e.id.unix_ms()).unwrap_or(i64::MAX);
        out.id.push(e.id.as_str());
        out.at.push(at - last);
        last = at;
        out.kind.push(kind);
        out.actor.push(actor);
        let subject = match e.subject.as_deref() {
            Some(s) => subjects.get(s).copied().unwrap_or_else(|| {
                out.other.insert(i, s);
                -1
            }),
            None => -1,
        };
        out.subject.push(subject);
        if let Some(why) = &e.ignored {
            out.ignored.insert(i, why.as_str());
        }
        if let Some(signer) = &e.signed_by {
            out.signed.insert(i, signer.as_str());
        }
    }
    out
}

/// The page: one HTML document with its data, style and script inline.
pub fn render(data: &PageData) -> Result<String, serde_json::Error> {
    let a = &data.atlas;
    let embedded = Embedded {
        page: data.page,
        kapi: data.kapi,
        made_at: &data.made_at,
        as_of: &data.as_of,
        tip: &data.tip,
        digest: &data.digest,
        atlas: PackedAtlas {
            atlas: a.atlas,
            project: &a.project,
            generated_at: &a.generated_at,
            as_of: a.as_of.as_deref(),
            axes: &a.axes,
            subjects: &a.subjects,
            events: pack(a),
            windows: &a.windows,
            places: &a.places,
        },
    };
    let json = script_safe_json(&serde_json::to_string(&embedded)?);
    let csp = format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; img-src 'none'; base-uri 'none'; form-action 'none'",
        sha256_source(SCRIPT),
        sha256_source(STYLE)
    );
    let title = html_text(&format!("kapi atlas · {}", data.atlas.project));
    let mut out = String::with_capacity(TEMPLATE.len() + STYLE.len() + SCRIPT.len() + json.len());
    let mut rest = TEMPLATE;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        match &after[..end] {
            "csp" => out.push_str(&html_text(&csp)),
            "title" => out.push_str(&title),
            "style" => out.push_str(STYLE),
            "script" => out.push_str(SCRIPT),
            "data" => out.push_str(&json),
            other => {
                unreachable!("the page template names {{{{{other}}}}}, which render does not fill")
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `'sha256-…'`: a CSP source naming an inline element by its content.
fn sha256_source(content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` (found
/// only inside JSON strings) become `\u003c`, `\u003e` and `\u0026`, so no
/// `</script>` or `<!--` can appear, and U+2028 and U+2029 become escapes.
/// `JSON.parse` reads back the same strings.
pub fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Text as HTML character data or an attribute value.
fn html_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_cannot_close_the_data_block() {
        let text = "</script><script>alert(1)</script><!-- \u{2028}\u{2029} & </SCRIPT >";
        let json = serde_json::to_string(&serde_json::json!({ "use": text })).unwrap();
        let safe = script_safe_json(&json);
        for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!safe.contains(bad), "{bad:?} left in {safe}");
        }
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["use"], text);
    }

    #[test]
    fn the_template_names_each_part_once() {
        for part in [
            "{{csp}}",
            "{{title}}",
            "{{style}}",
            "{{script}}",
            "{{data}}",
        ] {
            assert_eq!(TEMPLATE.matches(part).count(), 1, "{part}");
        }
        // The style and script hold no marker the template fill would read.
        assert!(!STYLE.contains("</style"));
        assert!(!SCRIPT.contains("</script"));
    }

    #[test]
    fn html_text_escapes_markup() {
        assert_eq!(
            html_text("<b a=\"1\">'&'</b>"),
            "&lt;b a=&quot;1&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;"
        );
    }
}
