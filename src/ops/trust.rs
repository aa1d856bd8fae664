//! Signed decisions (`[trust]` in kapi.toml, docs/security.md): which
//! operations a signature vouches for, and whether one does.
//!
//! A person's decision (keep, drop, widen, reset, import, edit, a person's
//! correction) is signed by the person's key; a merge signal or an
//! establishment by the CI's (the principal `ci`). The signature is an
//! SSHSIG in the namespace `kapi` over the record's canonical bytes
//! without it ([`Record::signed_bytes`]): the project, the id and its
//! instant are among them, so a signature binds one operation of one
//! project at one time. It verifies against git's allowed-signers file
//! ([`crate::formats::allowed_signers`]) as the default branch holds it:
//! the key listed for a principal that names the actor, in the namespace,
//! valid at the operation's instant.
//!
//! Pure: the file's bytes come in, verdicts go out; the fold asks
//! [`Trust::verify`] of every operation that wants a signature, so a
//! fold stays a function of the log and those bytes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ssh_key::{LineEnding, SshSig};

use super::record::{ActorKind, Kind, Record, SignalSource};
use crate::formats::allowed_signers::{self, AllowedSigner, AllowedSigners};
use crate::store::verdicts::{self, Tag};

/// The SSHSIG namespace of kapi's signatures (`ssh-keygen -Y sign -n kapi`).
pub const NAMESPACE: &str = "kapi";
/// The principal whose key signs merge signals and establishments.
pub const CI_PRINCIPAL: &str = "ci";

/// What `[trust] decisions` asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Signatures are recorded and shown, never required.
    #[default]
    Shown,
    /// An operation that wants a signature counts only with one that
    /// verifies.
    Signed,
}

/// Who must have signed an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vouch<'r> {
    /// The person the record names as its actor.
    Person(&'r str),
    /// The CI (`ci` in the allowed-signers file).
    Ci,
}

impl Vouch<'_> {
    /// The principal the allowed-signers file must list the key for.
    pub fn principal(&self) -> &str {
        match self {
            Vouch::Person(name) => name,
            Vouch::Ci => CI_PRINCIPAL,
        }
    }
}

/// Who must sign `record`, if anyone: a person's decision (or a person's
/// correction) by that person, a merge signal or an establishment by the
/// CI.
pub fn wanted(record: &Record) -> Option<Vouch<'_>> {
    let person = record.actor.kind == ActorKind::Person;
    match record.kind {
        Kind::Keep | Kind::Drop | Kind::Widen | Kind::Reset | Kind::Import | Kind::Edit => {
            Some(Vouch::Person(&record.actor.name))
        }
        Kind::Correct if person => Some(Vouch::Person(&record.actor.name)),
        Kind::Signal
            if record
                .signal
                .as_ref()
                .is_some_and(|s| s.source == SignalSource::Merge) =>
        {
            Some(Vouch::Ci)
        }
        Kind::Establish => Some(Vouch::Ci),
        _ => None,
    }
}

/// What a signature says of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by a key the file lists for this principal, valid then.
    Signed(CompactString),
    Unsigned,
    /// The key is not listed (for this principal, in the namespace `kapi`).
    UnknownSigner,
    /// The signature does not verify over these bytes, or does not parse.
    BadSignature,
    /// The key was listed, but not valid at the operation's instant
    /// (`valid-after`, `valid-before`).
    NotAllowedThen,
    /// A valid signature over an operation of another project.
    OtherProject,
}

impl Verdict {
    /// Why the fold ignores the operation (signed mode), as doctor, the log
    /// and review name it.
    pub fn reason(&self, vouch: Vouch<'_>) -> String {
        let who = vouch.principal();
        match self {
            Verdict::Signed(_) => String::new(),
            Verdict::Unsigned => format!(
                "unsigned: this project counts it only signed by {who} ([trust] decisions = \"signed\")"
            ),
            Verdict::UnknownSigner => format!(
                "unknown signer: the key that signed it is not listed for {who} in the allowed-signers file on the default branch"
            ),
            Verdict::BadSignature => {
                "bad signature: it does not verify over the operation as recorded (altered, or not a kapi signature)".into()
            }
            Verdict::NotAllowedThen => format!(
                "signer not allowed then: {who}'s key was not valid at the operation's instant (valid-after, valid-before)"
            ),
            Verdict::OtherProject => {
                "signed for another project: the signature is valid, for an operation of another project".into()
            }
        }
    }
}

/// Whether a reason the fold gives for ignoring an operation is its
/// signature's ([`Verdict::reason`]).
pub fn is_signature_reason(reason: &str) -> bool {
    [
        "unsigned: ",
        "unknown signer: ",
        "bad signature: ",
        "signer not allowed then: ",
        "signed for another project: ",
    ]
    .iter()
    .any(|p| reason.starts_with(p))
}

/// The trust a project's fold reads by: the mode, the allowed-signers
/// file (as the default branch holds it) and the project's key.
#[derive(Debug)]
pub struct Trust {
    pub mode: Mode,
    pub project: CompactString,
    pub signers: AllowedSigners,
    /// The SHA-256 of the file's bytes (the fold checkpoint's
    /// fingerprint names it).
    pub digest: String,
    /// Where signatures verified before are remembered (`.git/kapi`),
    /// read on the first verification, when there is one.
    memory_dir: Option<PathBuf>,
    memory: OnceLock<Option<Memory>>,
}

/// Signatures verified before ([`crate::store::verdicts`]), and those
/// verified since, to remember.
#[derive(Debug)]
pub struct Memory {
    secret: [u8; 32],
    known: HashMap<Tag, CompactString>,
    fresh: Mutex<Vec<(Tag, CompactString)>>,
}

impl Trust {
    pub fn new(mode: Mode, project: &str, bytes: &[u8]) -> Arc<Trust> {
        Arc::new(Self::unshared(mode, project, bytes))
    }

    fn unshared(mode: Mode, project: &str, bytes: &[u8]) -> Trust {
        Trust {
            mode,
            project: project.into(),
            signers: allowed_signers::parse(bytes),
            digest: crate::digest::sha256_hex(bytes),
            memory_dir: None,
            memory: OnceLock::new(),
        }
    }

    /// [`Trust::new`], remembering verified signatures in `kapi_dir`
    /// ([`crate::store::verdicts`]): a cold read verifies only what it
    /// did not verify before.
    pub fn remembering(mode: Mode, project: &str, bytes: &[u8], kapi_dir: &Path) -> Arc<Trust> {
        let mut trust = Self::unshared(mode, project, bytes);
        trust.memory_dir = Some(kapi_dir.to_path_buf());
        Arc::new(trust)
    }

    fn memory(&self) -> Option<&Memory> {
        self.memory
            .get_or_init(|| {
                let dir = self.memory_dir.as_deref()?;
                Some(Memory {
                    secret: verdicts::secret(dir)?,
                    known: verdicts::load(dir, &self.digest),
                    fresh: Mutex::new(Vec::new()),
                })
            })
            .as_ref()
    }

    /// [`Trust::verify`], answered from the signatures verified before
    /// when this one is among them (its tag, which only this
    /// repository's secret makes, matches), and remembered when it
    /// verifies now.
    pub fn judge(&self, record: &Record, vouch: Vouch<'_>) -> Verdict {
        if record.sig.is_none() {
            return Verdict::Unsigned;
        }
        let signed = record.signed_bytes();
        let Some(memory) = self.memory() else {
            return self.verify(record, &signed, vouch);
        };
        let tag = memory.tag(&self.digest, &self.project, &signed, record.sig.as_deref());
        if let Some(principal) = memory.known.get(&tag)
            && principal == vouch.principal()
        {
            return Verdict::Signed(principal.clone());
        }
        let verdict = self.verify(record, &signed, vouch);
        if let Verdict::Signed(principal) = &verdict {
            memory
                .fresh
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((tag, principal.clone()));
        }
        verdict
    }

    /// Write down the signatures verified since the memory was read, if
    /// any (a derived file: a failure loses nothing but time).
    pub fn remember(&self) {
        let (Some(dir), Some(Some(memory))) = (self.memory_dir.as_deref(), self.memory.get())
        else {
            return;
        };
        let fresh = std::mem::take(
            &mut *memory
                .fresh
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if fresh.is_empty() {
            return;
        }
        let mut all: HashMap<&Tag, &CompactString> = memory.known.iter().collect();
        all.extend(fresh.iter().map(|(t, p)| (t, p)));
        verdicts::save(dir, &self.digest, all.into_iter());
    }

    /// The lines of the allowed-signers file that list `key` for
    /// `principal` in kapi's namespace (at any time: each line says when
    /// it is valid). The fold verifies by these, and the door refuses a
    /// person none of them lists now, so the two never disagree.
    pub fn listed(&self, key: &ssh_key::public::KeyData, principal: &str) -> Vec<&AllowedSigner> {
        self.signers
            .signers
            .iter()
            .filter(|s| {
                !s.cert_authority
                    && s.key.key_data() == key
                    && s.allows_namespace(NAMESPACE)
                    && s.allows_principal(principal)
            })
            .collect()
    }

    /// What `record`'s signature says, for the principal `vouch` names;
    /// `signed` is its [`Record::signed_bytes`].
    fn verify(&self, record: &Record, signed: &str, vouch: Vouch<'_>) -> Verdict {
        let Some(sig) = record.sig.as_deref() else {
            return Verdict::Unsigned;
        };
        let Some(sig) = decode(sig) else {
            return Verdict::BadSignature;
        };
        if sig.namespace() != NAMESPACE {
            return Verdict::BadSignature;
        }
        let principal = vouch.principal();
        let listed = self.listed(sig.public_key(), principal);
        let Some(first) = listed.first() else {
            return Verdict::UnknownSigner;
        };
        if first
            .key
            .verify(NAMESPACE, signed.as_bytes(), &sig)
            .is_err()
        {
            return Verdict::BadSignature;
        }
        if record.project != self.project {
            return Verdict::OtherProject;
        }
        let at = super::id::parse_instant_ms(&record.at).unwrap_or(u64::MAX);
        if !listed.iter().any(|s| s.valid_at(at)) {
            return Verdict::NotAllowedThen;
        }
        Verdict::Signed(principal.into())
    }
}

impl Memory {
    /// The tag of an operation (`signed`, the bytes its signature covers,
    /// and `sig`, the signature: its whole canonical line, in effect)
    /// under the allowed-signers file `digest`, read for the project
    /// `project`.
    fn tag(&self, digest: &str, project: &str, signed: &str, sig: Option<&str>) -> Tag {
        let mut hash = Sha256::new();
        hash.update(self.secret);
        hash.update(digest.as_bytes());
        hash.update(b"\n");
        hash.update(project.as_bytes());
        hash.update(b"\n");
        hash.update(signed.as_bytes());
        hash.update(b"\n");
        hash.update(sig.unwrap_or_default().as_bytes());
        hash.finalize().into()
    }
}

/// The base64 of an SSHSIG's binary form, as a record carries it, read.
fn decode(sig: &str) -> Option<SshSig> {
    let mut pem = String::with_capacity(sig.len() + 80);
    pem.push_str("-----BEGIN SSH SIGNATURE-----\n");
    for chunk in sig.as_bytes().chunks(70) {
        pem.push_str(std::str::from_utf8(chunk).ok()?);
        pem.push('\n');
    }
    pem.push_str("-----END SSH SIGNATURE-----\n");
    SshSig::from_pem(pem).ok()
}

/// The armored signature `ssh-keygen -Y sign` prints, as a record carries
/// it: the base64 between the armour lines, unwrapped. `None` when it is
/// not one.
pub fn from_armored(armored: &str) -> Option<String> {
    let sig = SshSig::from_pem(armored.trim()).ok()?;
    let pem = sig.to_pem(LineEnding::LF).ok()?;
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    (sig.namespace() == NAMESPACE).then_some(body)
}
