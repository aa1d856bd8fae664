//! The operation record: what one recorded change to the context holds, its
//! canonical bytes, and the checks every record read from a ref or a file
//! passes before anyone folds it.
//!
//! Status, contested-by, established and standing are folded from the log
//! (`crate::ops::fold`), never stored.

use std::collections::BTreeMap;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use super::id::OpId;
use super::slim::Rare;
pub use super::slim::Slim;

/// The version of the record format this build writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;
/// The largest record kapi accepts, in canonical bytes.
pub(crate) const MAX_RECORD_BYTES: usize = 1024 * 1024;
/// Bounds on untrusted content inside a record (docs/operations.md,
/// "Limits"): checked when an operation is recorded (the door refuses it,
/// naming the limit) and when one is read (named and skipped).
pub(crate) const MAX_TEXT: usize = 8 * 1024;
pub(super) const MAX_LIST: usize = 256;
/// A term rule's form (to use or to avoid).
pub(crate) const MAX_FORM: usize = 1024;
/// A file path (evidence, a check run's files and findings).
pub(crate) const MAX_PATH: usize = 4096;
/// Short names: project, actor name, session, a point's axis and value, an
/// evidence unit, a content address, a signal's commit, PR and merger, a
/// check's hook and rule.
pub(crate) const MAX_NAME: usize = 256;
/// A window bound (`valid_from`, `valid_to`), a SHA-256, a basis commit.
pub(crate) const MAX_STAMP: usize = 64;
/// A signature (`sig`, base64): an Ed25519 or ECDSA SSHSIG, from a FIDO
/// key too, is well under 1 KiB.
pub(crate) const MAX_SIG: usize = 4096;
/// Files one check run lists.
pub(super) const MAX_CHECK_FILES: usize = 100_000;
/// The most term rules one imported file carries.
pub(crate) const MAX_TERMS: usize = 20_000;
/// The largest content blob a record names (`subject.blob`): the parsed
/// rules of an import too large to carry inline.
pub(crate) const MAX_CONTENT_BYTES: u64 = 64 * 1024 * 1024;

/// One recorded change to a project's context. Its short texts (ids, the
/// instant, project, actor, session) are [`CompactString`]s, held inline
/// up to 24 bytes: a read of a long log allocates nothing for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The format version (`FORMAT_VERSION`).
    pub v: u32,
    /// The operation id, the same in every log that holds it.
    pub id: CompactString,
    /// The project the operation belongs to.
    pub project: CompactString,
    pub actor: Actor,
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Box<Subject>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<Box<Correction>>,
    /// Where it was seen. This field, `basis`, `scope` and `because` are
    /// [`Slim`]: out of line when set, eight bytes when empty (as in the
    /// usage signals and check runs that are most of a long log).
    #[serde(default, skip_serializing_if = "Slim::is_empty")]
    pub evidence: Slim<Vec<Evidence>>,
    #[serde(default, skip_serializing_if = "Slim::is_empty")]
    pub basis: Slim<Basis>,
    #[serde(default, skip_serializing_if = "Slim::is_empty")]
    pub scope: Slim<Scope>,
    /// The operation this one acts on (keep, drop, withdraw, widen, signal, establish).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<CompactString>,
    /// The first operation a reset sets aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<CompactString>,
    /// Why, in the recorder's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When the log accepted it (RFC 3339, UTC, milliseconds).
    pub at: CompactString,
    /// A content address: a log holds one operation per address, the older id stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The evidence a signal carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<Box<Signal>>,
    /// The signals an establishment rested on.
    #[serde(default, skip_serializing_if = "Slim::is_empty")]
    pub because: Slim<Vec<String>>,
    /// One run of the checks (kind `check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Box<CheckRun>>,
    /// A keep that binds as advice only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advisory: bool,
    /// The SSH signature (SSHSIG, namespace `kapi`, base64 of the binary
    /// form) over the record's canonical bytes without this field
    /// ([`Record::signed_bytes`]): who vouches for a person's decision
    /// (`crate::ops::trust`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// Who recorded an operation. Attribution, not authentication.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    pub kind: ActorKind,
    pub name: CompactString,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<CompactString>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActorKind {
    Person,
    Agent,
    Tool,
}

impl ActorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::Person => "person",
            ActorKind::Agent => "agent",
            ActorKind::Tool => "tool",
        }
    }
}

impl Actor {
    /// kapi's own tool `name` (the checker, settling, a merge), in no session.
    pub(crate) fn tool(name: &str) -> Actor {
        Actor {
            kind: ActorKind::Tool,
            name: name.to_owned().into(),
            session: None,
        }
    }

    /// Whether `self` and `other` are one party: the same kind and name, and
    /// for agents and tools the same session. Two sessions of one agent are
    /// two parties, and an agent with no session is a party of its own.
    pub(crate) fn same_party(&self, other: &Actor) -> bool {
        self.kind == other.kind
            && self.name == other.name
            && (self.kind == ActorKind::Person
                || (self.session.is_some() && self.session == other.session))
    }

    /// `agent claude-code (session 1f3a…)` as a log line shows it.
    pub(crate) fn label(&self) -> String {
        match &self.session {
            Some(s) if self.kind != ActorKind::Person => {
                let s: String = s.chars().take(8).collect();
                format!("{} {} [{s}]", self.kind.as_str(), self.name)
            }
            _ => format!("{} {}", self.kind.as_str(), self.name),
        }
    }
}

/// The twelve kinds of operation, persisted as `context.<kind>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    #[serde(rename = "context.observe")]
    Observe,
    #[serde(rename = "context.correct")]
    Correct,
    #[serde(rename = "context.import")]
    Import,
    #[serde(rename = "context.edit")]
    Edit,
    #[serde(rename = "context.keep")]
    Keep,
    #[serde(rename = "context.drop")]
    Drop,
    #[serde(rename = "context.withdraw")]
    Withdraw,
    #[serde(rename = "context.reset")]
    Reset,
    #[serde(rename = "context.widen")]
    Widen,
    #[serde(rename = "context.signal")]
    Signal,
    #[serde(rename = "context.establish")]
    Establish,
    #[serde(rename = "context.check")]
    Check,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::Observe,
        Kind::Correct,
        Kind::Import,
        Kind::Edit,
        Kind::Keep,
        Kind::Drop,
        Kind::Withdraw,
        Kind::Reset,
        Kind::Widen,
        Kind::Signal,
        Kind::Establish,
        Kind::Check,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Observe => "observe",
            Kind::Correct => "correct",
            Kind::Import => "import",
            Kind::Edit => "edit",
            Kind::Keep => "keep",
            Kind::Drop => "drop",
            Kind::Withdraw => "withdraw",
            Kind::Reset => "reset",
            Kind::Widen => "widen",
            Kind::Signal => "signal",
            Kind::Establish => "establish",
            Kind::Check => "check",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        let text = text.strip_prefix("context.").unwrap_or(text);
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Kinds that name an earlier operation in `target`.
    #[cfg(test)]
    pub(crate) fn needs_target(self) -> bool {
        matches!(
            self,
            Kind::Keep | Kind::Drop | Kind::Withdraw | Kind::Widen | Kind::Signal | Kind::Establish
        )
    }

    /// Kinds that stay on the machine that recorded them (`refs/kapi/local`).
    pub(crate) fn is_local(self) -> bool {
        self == Kind::Check
    }
}

/// What an operation is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Subject {
    /// A term rule: the form the project uses and every form it avoids.
    Term {
        #[serde(rename = "use")]
        preferred: String,
        avoid: Vec<String>,
    },
    /// A note in prose, such as who the documents address.
    Note { text: String },
    /// A content-memory pair: a source segment and the target wording kept for it.
    Pair { source: String, target: String },
    /// The term rules one context file held (an `import`): inline, or,
    /// when they are large, in a git blob the record names (`blob`; the
    /// store reads it back into `terms`, and the canonical bytes then
    /// leave `terms` out).
    Terms {
        #[serde(default)]
        terms: Vec<TermEntry>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<ContentBlob>,
    },
}

/// Large parsed content kept beside the record, in a git blob: the
/// canonical JSON of the field it stands for (`subject.terms`). A reader
/// fetches it, checks its size and SHA-256 before it parses it, and names
/// a blob that is missing or does not match; the log's commits keep it
/// reachable, so a push or a fetch of the log carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentBlob {
    /// The git object id of the blob (hex).
    pub id: String,
    /// The SHA-256 of its bytes (hex).
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
}

impl ContentBlob {
    /// Whether its fields are well formed: a hex object id (SHA-1 or
    /// SHA-256 repositories), a hex SHA-256, a size within the limit.
    pub(super) fn check(&self) -> Result<(), RecordError> {
        let hex = crate::digest::is_lower_hex;
        if !(matches!(self.id.len(), 40 | 64) && hex(&self.id)) {
            return Err(RecordError::Invalid(
                "a content blob's id is 40 or 64 lower-case hex digits".into(),
            ));
        }
        if !(self.sha256.len() == 64 && hex(&self.sha256)) {
            return Err(RecordError::Invalid(
                "a content blob's sha256 is 64 lower-case hex digits".into(),
            ));
        }
        if self.bytes > MAX_CONTENT_BYTES {
            return Err(RecordError::TooLong {
                what: "a content blob",
                bytes: self.bytes as usize,
                limit: MAX_CONTENT_BYTES as usize,
            });
        }
        Ok(())
    }
}

/// One term rule of an imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TermEntry {
    /// The form to use; absent for a rejected word with no replacement.
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub avoid: Vec<String>,
    /// A regular expression (Vale's syntax) for what the rule avoids beyond
    /// its literal forms: an imported Vale key with look-around or
    /// unbounded repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// A Vale rule's alert level (`error`, `warning`, `suggestion`), which
    /// its findings name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Globs of the files the rule holds for (a Vale style enabled by
    /// `.vale.ini` for some sections only); empty for every file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Reports but never fails a check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advisory: bool,
    /// The file declares it a suggestion: it advises.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suggested: bool,
    /// Every avoided form matches only as written (a case-sensitive source,
    /// such as a Vale substitution without `ignorecase`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
    /// How a match's edges must stand in the text (absent: as kapi's own
    /// rules, whole words).
    #[serde(default, skip_serializing_if = "Bounds::is_words")]
    pub bounds: Bounds,
    /// Matched in the file's raw text, markup and code included, not in its
    /// prose (a Vale rule with `scope: raw`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw: bool,
}

/// How a match of a rule's forms or pattern must stand in the text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bounds {
    /// Whole words, and not part of a path, domain or hyphenated compound
    /// (kapi's own rules and term lists).
    #[default]
    Words,
    /// Word boundaries as a regular expression reads `\b` at both ends
    /// (Vale's word template `\b(?:key)\b`): `special` matches in
    /// `special-cased`, and `vs.` only where a word character follows.
    Regex,
    /// Anywhere (a Vale substitution with `nonword: true`).
    None,
}

impl Bounds {
    pub(crate) fn is_words(&self) -> bool {
        *self == Bounds::Words
    }
}

impl Subject {
    /// `"Quickcast", not "Quick cast", "Quick-cast"` or the note's text.
    pub fn describe(&self) -> String {
        match self {
            Subject::Term { preferred, avoid } => {
                let avoided: Vec<String> = avoid.iter().map(|a| format!("\"{a}\"")).collect();
                format!("\"{preferred}\", not {}", avoided.join(", "))
            }
            Subject::Note { text } => text.clone(),
            Subject::Pair { source, target } => format!("\"{source}\" → \"{target}\""),
            Subject::Terms { terms, .. } => format!(
                "{} term rule{}",
                terms.len(),
                if terms.len() == 1 { "" } else { "s" }
            ),
        }
    }
}

/// The wording before and after a person's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Correction {
    pub from: String,
    pub to: String,
}

/// Where something was seen: a file, a unit within it, a quotation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The SHA-256 of the bytes read (imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// The governance in force when the operation was recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Basis {
    /// The commit checked out (HEAD), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl Basis {
    pub(crate) fn is_empty(&self) -> bool {
        self.commit.is_none()
    }
}

impl Rare for Basis {
    fn empty() -> &'static Self {
        static EMPTY: Basis = Basis { commit: None };
        &EMPTY
    }
    fn is_empty(&self) -> bool {
        Basis::is_empty(self)
    }
}

/// Where a rule applies (a point: axis → value) and for how long
/// (`valid_from` inclusive, `valid_to` exclusive).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub point: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    /// A person widened the rule to the workspace: it holds in every
    /// repository registered with kapi on this machine, not only in its
    /// project (`kapi context review --widen-to workspace`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workspace: bool,
}

impl Rare for Scope {
    fn empty() -> &'static Self {
        static EMPTY: Scope = Scope {
            point: BTreeMap::new(),
            valid_from: None,
            valid_to: None,
            workspace: false,
        };
        &EMPTY
    }
    fn is_empty(&self) -> bool {
        Scope::is_empty(self)
    }
}

impl Scope {
    pub(crate) fn is_empty(&self) -> bool {
        self.point.is_empty()
            && self.valid_from.is_none()
            && self.valid_to.is_none()
            && !self.workspace
    }
}

/// Evidence nobody wrote down by hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signal {
    pub source: SignalSource,
    /// Uses of the preferred form counted (added lines, for a merge).
    #[serde(default)]
    pub preferred: u64,
    /// Uses of avoided forms counted (removed lines, for a merge).
    #[serde(default)]
    pub avoided: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merger: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalSource {
    Usage,
    Merge,
    Applied,
}

/// One run of the project's checks for an assistant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRun {
    /// `stop`, `edit` or `manual`.
    pub hook: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub failing: Vec<CheckFailure>,
    pub clean: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckFailure {
    pub path: String,
    pub rule: String,
    pub quote: String,
}

/// Why a record read from a ref or a file was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("oversized: {bytes} bytes, the limit is {MAX_RECORD_BYTES}")]
    Oversized { bytes: usize },
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("unknown format version {0} (this kapi reads version {FORMAT_VERSION}; upgrade kapi)")]
    UnknownVersion(u64),
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("{what} has {bytes} bytes, over the {limit}-byte limit")]
    TooLong {
        what: &'static str,
        bytes: usize,
        limit: usize,
    },
    #[error("{what} has {count} entries, over the limit of {limit}")]
    TooMany {
        what: &'static str,
        count: usize,
        limit: usize,
    },
}

impl Record {
    /// A record of `kind` by `actor` that carries nothing else yet; the
    /// store mints its `id` and `at` when it is appended.
    pub fn new(project: impl Into<CompactString>, actor: Actor, kind: Kind) -> Record {
        Record {
            v: FORMAT_VERSION,
            id: CompactString::default(),
            project: project.into(),
            actor,
            kind,
            subject: None,
            correction: None,
            evidence: Slim::default(),
            basis: Slim::default(),
            scope: Slim::default(),
            target: None,
            before: None,
            note: None,
            at: CompactString::default(),
            address: None,
            signal: None,
            because: Slim::default(),
            check: None,
            advisory: false,
            sig: None,
        }
    }

    /// The canonical bytes: compact JSON, keys sorted, UTF-8, no newline.
    /// Content kept in a blob (`subject.blob`) is named, not repeated: its
    /// `terms` are left out, whether or not they were read back.
    pub fn to_canonical_json(&self) -> String {
        let value = self.canonical_value();
        serde_json::to_string(&value).expect("a value always serializes")
    }

    /// The canonical form as a JSON value (objects' keys sorted).
    fn canonical_value(&self) -> serde_json::Value {
        // serde_json's Value keeps object keys in a BTreeMap: sorted.
        let mut value = serde_json::to_value(self).expect("a record always serializes");
        if let Some(Subject::Terms { blob: Some(_), .. }) = self.subject.as_deref()
            && let Some(subject) = value.get_mut("subject").and_then(|s| s.as_object_mut())
        {
            subject.remove("terms");
        }
        value
    }

    /// The bytes a signature covers: the canonical bytes without `sig`
    /// (the project, the id and its instant among them, so a signature
    /// binds one operation of one project at one time). Built from the
    /// record as it is, never from a copy of it.
    pub fn signed_bytes(&self) -> String {
        let mut value = self.canonical_value();
        if let Some(record) = value.as_object_mut() {
            record.remove("sig");
        }
        serde_json::to_string(&value).expect("a value always serializes")
    }

    /// The canonical line, when it is within the limit of one record: what
    /// a writer checks before anything reaches the journal (a reader
    /// refuses a longer line, so it must never be written).
    pub(crate) fn to_checked_line(&self) -> Result<String, RecordError> {
        let line = self.to_canonical_json();
        if line.len() > MAX_RECORD_BYTES {
            return Err(RecordError::Oversized { bytes: line.len() });
        }
        Ok(line)
    }

    /// The content blob the record names, if any.
    pub(crate) fn content_blob(&self) -> Option<&ContentBlob> {
        match self.subject.as_deref() {
            Some(Subject::Terms { blob, .. }) => blob.as_ref(),
            _ => None,
        }
    }

    /// Whether the record names a content blob it has not read back yet.
    pub(crate) fn content_unread(&self) -> bool {
        matches!(self.subject.as_deref(), Some(Subject::Terms { terms, blob: Some(_) }) if terms.is_empty())
    }

    /// This record as the log writes it under `id`: the id and its own
    /// instant, `at`, stamped on; what the store does when it mints.
    pub fn stamped(&self, id: OpId) -> Record {
        Record {
            id: id.to_string().into(),
            at: super::id::rfc3339_ms(id.unix_ms()).into(),
            ..self.clone()
        }
    }

    /// The operation id. Valid once `validate` passed.
    pub(crate) fn op_id(&self) -> OpId {
        OpId::parse(&self.id).expect("validated records carry valid ids")
    }

    /// The operation it acts on, if any. Valid once `validate` passed.
    pub fn target_id(&self) -> Option<OpId> {
        let target = self.target.as_deref()?;
        Some(OpId::parse(target).expect("validated records carry valid targets"))
    }

    /// The operations it rests on (`because`). Valid once `validate` passed.
    pub fn because_ids(&self) -> Vec<OpId> {
        self.because
            .iter()
            .map(|b| OpId::parse(b).expect("validated records carry valid ids"))
            .collect()
    }

    pub fn short(&self) -> &str {
        super::id::short(&self.id)
    }

    /// Whether the record states something a status belongs to.
    #[cfg(test)]
    pub(crate) fn has_subject(&self) -> bool {
        self.subject.is_some() || self.kind == Kind::Correct
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(terms: Vec<TermEntry>, blob: Option<ContentBlob>) -> Record {
        let id = OpId::mint(super::super::id::EPOCH_MS + 1000, 7, None).unwrap();
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            subject: Some(Box::new(Subject::Terms { terms, blob })),
            ..Record::new(
                "p",
                Actor {
                    kind: ActorKind::Person,
                    name: "ada".into(),
                    session: None,
                },
                Kind::Import,
            )
        }
    }

    fn rule() -> TermEntry {
        TermEntry {
            preferred: Some("GitHub".into()),
            avoid: vec!["Github".into()],
            pattern: None,
            level: None,
            paths: Vec::new(),
            advisory: false,
            suggested: false,
            exact: false,
            bounds: Bounds::Words,
            raw: false,
        }
    }

    fn blob() -> ContentBlob {
        ContentBlob {
            id: "41cce8a4f12766f4ee4647b7d104a3a8131e8e69".into(),
            sha256: "17ddc13dbcaf577976491523937169e486f1bc494e91e3de33705d1a4efade3a".into(),
            bytes: 37,
        }
    }

    #[test]
    fn content_in_a_blob_is_named_not_repeated_and_never_read_inline_too() {
        // Read back, the rules are in memory; the canonical bytes name the
        // blob and leave them out, and parse back to the stored form.
        let read_back = import(vec![rule()], Some(blob()));
        let line = read_back.to_canonical_json();
        assert!(!line.contains("\"terms\":"), "{line}");
        assert!(
            line.contains("\"subject\":{\"blob\":{\"bytes\":37,\"id\":\"41cc"),
            "{line}"
        );
        let stored = Record::from_untrusted(line.as_bytes()).unwrap();
        assert!(stored.content_unread());
        assert_eq!(stored.to_canonical_json(), line);
        // Inline rules are unchanged, `"terms":[]` included.
        let inline = import(Vec::new(), None).to_canonical_json();
        assert!(inline.contains("\"subject\":{\"terms\":[],\"type\":\"terms\"}"));
        // Both on one stored line is refused.
        let mut both: serde_json::Value = serde_json::from_str(&line).unwrap();
        both["subject"]["terms"] = serde_json::to_value(vec![rule()]).unwrap();
        let both = serde_json::to_string(&both).unwrap();
        assert!(matches!(
            Record::from_untrusted(both.as_bytes()),
            Err(RecordError::Invalid(_))
        ));
        // A blob's fields are checked: its id, its digest, its size.
        for bad in [
            ContentBlob {
                id: "nope".into(),
                ..blob()
            },
            ContentBlob {
                sha256: "ABC".into(),
                ..blob()
            },
            ContentBlob {
                bytes: MAX_CONTENT_BYTES + 1,
                ..blob()
            },
        ] {
            assert!(import(Vec::new(), Some(bad)).validate().is_err());
        }
    }

    #[test]
    fn a_record_over_the_limit_is_refused_where_it_is_built() {
        let mut big = import(Vec::new(), None);
        big.note = Some("x".repeat(MAX_TEXT));
        assert!(big.to_checked_line().is_ok());
        big.subject = Some(Box::new(Subject::Terms {
            terms: vec![rule(); 30_000],
            blob: None,
        }));
        assert!(matches!(
            big.to_checked_line(),
            Err(RecordError::Oversized { .. })
        ));
    }
}
