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
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};
use ssh_key::public::KeyData;
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
    /// The Ed25519 keys the file lists, decompressed once (by their 32
    /// bytes; a line whose key is not a curve point is left out, and
    /// ssh-key's own check judges what it signed).
    ed25519: HashMap<[u8; 32], ed25519_dalek::VerifyingKey>,
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
        let signers = allowed_signers::parse(bytes);
        let ed25519 = signers
            .signers
            .iter()
            .filter_map(|s| match s.key.key_data() {
                KeyData::Ed25519(key) => {
                    Some((key.0, ed25519_dalek::VerifyingKey::from_bytes(&key.0).ok()?))
                }
                _ => None,
            })
            .collect();
        Trust {
            mode,
            project: project.into(),
            signers,
            ed25519,
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
        match self.prepare(record, vouch) {
            Err(verdict) => verdict,
            Ok(check) => {
                let verifies = self.verifies(check.signer, signed.as_bytes(), &check.sig);
                check.conclude(verifies)
            }
        }
    }

    /// Everything [`Trust::verify`] asks of a signature but the curve
    /// check: the signature read, in kapi's namespace, by a key listed for
    /// the principal (else the verdict), and what the project and the
    /// operation's instant say once the signature verifies.
    fn prepare<'t>(&'t self, record: &Record, vouch: Vouch<'_>) -> Result<Check<'t>, Verdict> {
        let Some(sig) = record.sig.as_deref() else {
            return Err(Verdict::Unsigned);
        };
        let Some(sig) = decode(sig) else {
            return Err(Verdict::BadSignature);
        };
        if sig.namespace() != NAMESPACE {
            return Err(Verdict::BadSignature);
        }
        let principal = vouch.principal();
        let listed = self.listed(sig.public_key(), principal);
        let Some(&signer) = listed.first() else {
            return Err(Verdict::UnknownSigner);
        };
        let at = super::id::parse_instant_ms(&record.at).unwrap_or(u64::MAX);
        Ok(Check {
            other_project: record.project != self.project,
            valid_then: listed.iter().any(|s| s.valid_at(at)),
            principal: principal.into(),
            signer,
            sig,
        })
    }

    /// [`Trust::judge`] of each of `items`, in order, with the Ed25519
    /// curve checks of the signatures not remembered made [`BATCH`] at a
    /// time in one batch equation ([`Equation::all_hold`], a third of the
    /// work of checking them one by one). A batch that does not hold is
    /// checked again one by one, so each bad signature is named as
    /// [`Trust::judge`] would name it, and only it; both equations are
    /// cofactored, so a signature's verdict never depends on its batch.
    pub fn judge_many(&self, items: &[(&Record, Vouch<'_>)]) -> Vec<Verdict> {
        let memory = self.memory();
        let mut verdicts: Vec<Option<Verdict>> = vec![None; items.len()];
        // (item, its tag, its check, its signed bytes)
        let mut pending = Vec::new();
        for (i, &(record, vouch)) in items.iter().enumerate() {
            if record.sig.is_none() {
                verdicts[i] = Some(Verdict::Unsigned);
                continue;
            }
            let signed = record.signed_bytes();
            let tag =
                memory.map(|m| m.tag(&self.digest, &self.project, &signed, record.sig.as_deref()));
            if let (Some(memory), Some(tag)) = (memory, &tag)
                && let Some(principal) = memory.known.get(tag)
                && principal == vouch.principal()
            {
                verdicts[i] = Some(Verdict::Signed(principal.clone()));
                continue;
            }
            match self.prepare(record, vouch) {
                Err(verdict) => verdicts[i] = Some(verdict),
                Ok(check) => pending.push((i, tag, check, signed)),
            }
        }
        let mut verified = vec![false; pending.len()];
        let mut batch = Vec::with_capacity(pending.len());
        for (p, (_, _, check, signed)) in pending.iter().enumerate() {
            match self.equation(&check.sig, signed.as_bytes()) {
                Some(Some(equation)) => batch.push((p, equation)),
                Some(None) => verified[p] = false,
                None => verified[p] = self.verifies(check.signer, signed.as_bytes(), &check.sig),
            }
        }
        for chunk in batch.chunks(BATCH) {
            let equations: Vec<Equation> = chunk.iter().map(|c| c.1).collect();
            let all = Equation::all_hold(&equations);
            for (p, equation) in chunk {
                verified[*p] = all || equation.holds();
            }
        }
        let mut fresh = Vec::new();
        for ((i, tag, check, _), verifies) in pending.into_iter().zip(verified) {
            let verdict = check.conclude(verifies);
            if let (Verdict::Signed(principal), Some(tag)) = (&verdict, tag) {
                fresh.push((tag, principal.clone()));
            }
            verdicts[i] = Some(verdict);
        }
        if let Some(memory) = memory
            && !fresh.is_empty()
        {
            memory
                .fresh
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend(fresh);
        }
        verdicts
            .into_iter()
            .map(|v| v.expect("every item judged"))
            .collect()
    }
}

/// How many signatures one batch equation checks: large enough that the
/// equation's shared work is a small part of each, small enough that a
/// batch with a bad signature in it costs little to check again one by
/// one.
pub const BATCH: usize = 64;

/// A signature read, by a key listed for the principal, before its curve
/// check ([`Trust::prepare`]).
struct Check<'t> {
    sig: SshSig,
    signer: &'t AllowedSigner,
    principal: CompactString,
    other_project: bool,
    valid_then: bool,
}

impl Check<'_> {
    /// The verdict, once the curve check says whether the signature
    /// verifies.
    fn conclude(self, verifies: bool) -> Verdict {
        if !verifies {
            Verdict::BadSignature
        } else if self.other_project {
            Verdict::OtherProject
        } else if !self.valid_then {
            Verdict::NotAllowedThen
        } else {
            Verdict::Signed(self.principal)
        }
    }
}

impl Trust {
    /// The Ed25519 equation of `sig` over `message`: `None` when it is
    /// not one kapi checks itself (another key type, a key the file does
    /// not list as a curve point, a reserved field that is not empty:
    /// ssh-key judges those), `Some(None)` when the signature breaks an
    /// encoding rule ([`Equation::read`]) and so does not verify.
    fn equation(&self, sig: &SshSig, message: &[u8]) -> Option<Option<Equation>> {
        let KeyData::Ed25519(key) = sig.public_key() else {
            return None;
        };
        let verifying = self.ed25519.get(&key.0)?;
        if !sig.reserved().is_empty() {
            return None;
        }
        let Ok(signature) = ed25519_dalek::Signature::try_from(sig.signature()) else {
            return Some(None);
        };
        let Ok(data) = SshSig::signed_data(sig.namespace(), sig.hash_alg(), message) else {
            return Some(None);
        };
        Some(Equation::read(verifying, &data, &signature))
    }

    /// Whether `sig` (by `signer`'s key, in kapi's namespace: checked
    /// before) verifies over `message`. An Ed25519 signature by a listed
    /// key is checked by its cofactored [`Equation`], on the key
    /// decompressed once, over the SSHSIG signed data; anything else
    /// (another key type, a reserved field that is not empty) by ssh-key
    /// itself.
    fn verifies(&self, signer: &AllowedSigner, message: &[u8], sig: &SshSig) -> bool {
        match self.equation(sig, message) {
            Some(equation) => equation.is_some_and(|e| e.holds()),
            None => signer.key.verify(NAMESPACE, message, sig).is_ok(),
        }
    }
}

/// One Ed25519 signature's verification equation, as ZIP 215 checks it
/// (cofactored): `[8]([s]B - [k]A - R)` is the identity, with
/// `k = SHA-512(R ‖ A ‖ M) mod ℓ`. Alone ([`Equation::holds`]) and in a
/// batch ([`Equation::all_hold`]) the same equation, so a signature's
/// verdict is the same in any batch: a function of the signature, the
/// key and the message, not of what a clone had remembered.
#[derive(Debug, Clone, Copy)]
struct Equation {
    r: EdwardsPoint,
    a: EdwardsPoint,
    s: Scalar,
    k: Scalar,
    /// `R`'s and `A`'s encodings and `s`'s, which the batch's weights are
    /// drawn from.
    r_bytes: [u8; 32],
    a_bytes: [u8; 32],
}

impl Equation {
    /// The equation of `signature` by `key` over `message`, or `None`
    /// when the signature breaks an encoding rule: `s` must be below ℓ
    /// (canonical), `R` must be the encoding the curve's compression
    /// writes ([`canonical_point`]) of a curve point. `A` is the listed
    /// key as curve25519-dalek decompresses it (any point, its encoding
    /// hashed as the file writes it).
    fn read(
        key: &ed25519_dalek::VerifyingKey,
        message: &[u8],
        signature: &ed25519_dalek::Signature,
    ) -> Option<Equation> {
        let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(*signature.s_bytes()))?;
        let r_bytes = *signature.r_bytes();
        if !canonical_point(&r_bytes) {
            return None;
        }
        let r = CompressedEdwardsY(r_bytes).decompress()?;
        let a_bytes = *key.as_bytes();
        let mut hash = Sha512::new();
        hash.update(r_bytes);
        hash.update(a_bytes);
        hash.update(message);
        let mut wide = [0u8; 64];
        wide.copy_from_slice(&hash.finalize());
        Some(Equation {
            r,
            a: key.to_edwards(),
            s,
            k: Scalar::from_bytes_mod_order_wide(&wide),
            r_bytes,
            a_bytes,
        })
    }

    /// `[8]([s]B - [k]A - R) == identity`.
    fn holds(&self) -> bool {
        let sb_minus_ka =
            EdwardsPoint::vartime_double_scalar_mul_basepoint(&self.k, &-self.a, &self.s);
        (sb_minus_ka - self.r).mul_by_cofactor().is_identity()
    }

    /// Whether every one of `equations` holds, in one batch equation:
    /// `[8](-(Σ z_i s_i) B + Σ z_i R_i + Σ (z_i k_i) A_i) == identity`,
    /// with 128-bit weights `z_i` drawn deterministically from a SHA-512
    /// of the whole batch (every `R`, `A`, `k` and `s`, in order). Holds
    /// when each holds alone; when one does not, it fails but with a
    /// chance of 2^-128 that no one can raise without breaking SHA-512.
    fn all_hold(equations: &[Equation]) -> bool {
        let mut transcript = Sha512::new();
        transcript.update(b"kapi ed25519 cofactored batch\n");
        transcript.update((equations.len() as u64).to_le_bytes());
        for e in equations {
            transcript.update(e.r_bytes);
            transcript.update(e.a_bytes);
            transcript.update(e.k.as_bytes());
            transcript.update(e.s.as_bytes());
        }
        let seed = transcript.finalize();
        let weights: Vec<Scalar> = (0..equations.len() as u64)
            .map(|i| {
                let mut hash = Sha512::new();
                hash.update(seed);
                hash.update(i.to_le_bytes());
                let mut z = [0u8; 32];
                z[..16].copy_from_slice(&hash.finalize()[..16]);
                Scalar::from_bytes_mod_order(z)
            })
            .collect();
        let b = -weights
            .iter()
            .zip(equations)
            .map(|(z, e)| z * e.s)
            .sum::<Scalar>();
        let scalars = std::iter::once(b)
            .chain(weights.iter().copied())
            .chain(weights.iter().zip(equations).map(|(z, e)| z * e.k));
        let points = std::iter::once(ED25519_BASEPOINT_POINT)
            .chain(equations.iter().map(|e| e.r))
            .chain(equations.iter().map(|e| e.a));
        EdwardsPoint::vartime_multiscalar_mul(scalars, points)
            .mul_by_cofactor()
            .is_identity()
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

/// Whether `bytes` is the encoding the compression of an Edwards point
/// writes, if it is one: `y` below the field's prime 2^255 - 19, and no
/// sign set on an `x` of 0 (`y` of 1 or -1).
fn canonical_point(bytes: &[u8; 32]) -> bool {
    let mut y = *bytes;
    let sign = y[31] >> 7;
    y[31] &= 0x7f;
    // y >= p: y[31] = 0x7f, y[1..31] all 0xff, y[0] >= 0xed.
    if y[31] == 0x7f && y[1..31].iter().all(|&b| b == 0xff) && y[0] >= 0xed {
        return false;
    }
    let one = y[0] == 1 && y[1..].iter().all(|&b| b == 0);
    // p - 1 = 2^255 - 20: 0xec, then 0xff ..., then 0x7f.
    let minus_one = y[0] == 0xec && y[1..31].iter().all(|&b| b == 0xff) && y[31] == 0x7f;
    !(sign == 1 && (one || minus_one))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::id::{EPOCH_MS, OpId};
    use crate::ops::record::{Actor, ActorKind};
    use ssh_key::private::Ed25519Keypair;
    use ssh_key::{HashAlg, PrivateKey};

    const ADA: &str = "ada@example.com";

    fn keep(n: u64, project: &str) -> Record {
        let id = OpId::mint(EPOCH_MS + 1000 * n, u128::from(n), None).unwrap();
        let actor = Actor {
            kind: ActorKind::Person,
            name: ADA.into(),
            session: None,
        };
        Record {
            id: id.to_string().into(),
            at: id.instant().into(),
            ..Record::new(project, actor, Kind::Keep)
        }
    }

    fn sign(key: &PrivateKey, record: &mut Record) {
        let sig = SshSig::sign(
            key,
            NAMESPACE,
            HashAlg::Sha512,
            record.signed_bytes().as_bytes(),
        )
        .unwrap();
        record.sig = from_armored(&sig.to_pem(LineEnding::LF).unwrap());
        assert!(record.sig.is_some());
    }

    fn trust_in(key: &PrivateKey, memory: Option<&Path>) -> Arc<Trust> {
        let public = key.public_key().to_openssh().unwrap();
        let file = format!("{ADA} namespaces=\"kapi\" {public}\n");
        match memory {
            None => Trust::new(Mode::Signed, "p", file.as_bytes()),
            Some(dir) => Trust::remembering(Mode::Signed, "p", file.as_bytes(), dir),
        }
    }

    /// 300 signed keeps, three batches and more: one altered after it was
    /// signed, one carrying another's signature, one unsigned, one of
    /// another project, one by an unlisted key.
    fn log(key: &PrivateKey) -> (Vec<Record>, Vec<Verdict>) {
        let eve = PrivateKey::from(Ed25519Keypair::from_seed(&[9; 32]));
        let mut records = Vec::new();
        let mut expected = Vec::new();
        for n in 1..=300 {
            let mut r = keep(n, if n == 200 { "q" } else { "p" });
            sign(if n == 250 { &eve } else { key }, &mut r);
            let verdict = match n {
                70 => {
                    r.at = keep(999, "p").at;
                    Verdict::BadSignature
                }
                150 => {
                    r.sig = records.first().and_then(|f: &Record| f.sig.clone());
                    Verdict::BadSignature
                }
                180 => {
                    r.sig = None;
                    Verdict::Unsigned
                }
                200 => Verdict::OtherProject,
                250 => Verdict::UnknownSigner,
                _ => Verdict::Signed(ADA.into()),
            };
            records.push(r);
            expected.push(verdict);
        }
        (records, expected)
    }

    #[test]
    fn a_batch_with_one_forged_signature_names_exactly_that_one() {
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&[7; 32]));
        let trust = trust_in(&key, None);
        let (records, expected) = log(&key);
        let items: Vec<_> = records.iter().map(|r| (r, wanted(r).unwrap())).collect();
        assert_eq!(trust.judge_many(&items), expected);
        // Each as judged alone.
        for (r, want) in records.iter().zip(&expected) {
            assert_eq!(&trust.judge(r, wanted(r).unwrap()), want, "{}", r.id);
        }
        // Every batch good but one: one bad signature in a batch of its
        // own, and in the last, short batch.
        for bad in [0, BATCH - 1, 299] {
            let (mut records, mut expected) = log(&key);
            records.truncate(BATCH * 2 + 10);
            expected.truncate(BATCH * 2 + 10);
            let at = bad.min(records.len() - 1);
            records[at].at = keep(1000, "p").at;
            expected[at] = Verdict::BadSignature;
            let items: Vec<_> = records.iter().map(|r| (r, wanted(r).unwrap())).collect();
            assert_eq!(trust.judge_many(&items), expected, "bad at {at}");
        }
    }

    #[test]
    fn signatures_verified_in_a_batch_are_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&[7; 32]));
        let (records, expected) = log(&key);
        let items: Vec<_> = records.iter().map(|r| (r, wanted(r).unwrap())).collect();
        let trust = trust_in(&key, Some(dir.path()));
        assert_eq!(trust.judge_many(&items), expected);
        trust.remember();
        let again = trust_in(&key, Some(dir.path()));
        assert_eq!(again.judge_many(&items), expected);
        let known = again.memory().unwrap().known.len();
        assert_eq!(known, 295, "the signed ones, remembered");
    }

    #[test]
    fn only_the_encoding_compression_writes_is_a_canonical_point() {
        let mut p = [0u8; 32];
        p[0] = 1; // the identity: y = 1
        assert!(canonical_point(&p));
        p[31] = 0x80; // with the sign of an x of 0
        assert!(!canonical_point(&p));
        let mut q = [0xff; 32];
        q[31] = 0x7f; // y = 2^255 - 1 >= p
        assert!(!canonical_point(&q));
        q[0] = 0xed; // y = p
        assert!(!canonical_point(&q));
        q[0] = 0xec; // y = p - 1: canonical, unless signed
        assert!(canonical_point(&q));
        q[31] = 0xff;
        assert!(!canonical_point(&q));
        let base = ed25519_dalek::SigningKey::from_bytes(&[3; 32]).verifying_key();
        assert!(canonical_point(base.as_bytes()));
    }

    /// The scalar of the Ed25519 key made from `seed` (its SHA-512's
    /// first half, clamped).
    fn secret_scalar(seed: &[u8; 32]) -> Scalar {
        let hash = Sha512::digest(seed);
        let mut a = [0u8; 32];
        a.copy_from_slice(&hash[..32]);
        a[0] &= 248;
        a[31] &= 127;
        a[31] |= 64;
        Scalar::from_bytes_mod_order(a)
    }

    /// Signs `record` by the key made from `seed`, by hand, with the
    /// small-order point `torsion` added to `R` (or, when `on_key`, to the
    /// key `A` the signature names instead): `s` is computed for that `R`
    /// and `A`, so the cofactored equation holds and, on `R`, the
    /// cofactorless one (ssh-keygen's) does not. With
    /// `keep_s`, `s` stays the one made for `R` alone: no equation holds.
    fn sign_with_torsion(
        seed: &[u8; 32],
        record: &mut Record,
        torsion: EdwardsPoint,
        on_key: bool,
        keep_s: bool,
    ) -> [u8; 32] {
        let a = secret_scalar(seed);
        let key = ED25519_BASEPOINT_POINT * a;
        let public = if on_key { key + torsion } else { key };
        let a_bytes = public.compress().to_bytes();
        let data =
            SshSig::signed_data(NAMESPACE, HashAlg::Sha512, record.signed_bytes().as_bytes())
                .unwrap();
        let nonce = Scalar::from_bytes_mod_order_wide(&Sha512::digest(&data).into());
        let k_of = |r: &[u8; 32]| {
            let mut hash = Sha512::new();
            hash.update(r);
            hash.update(a_bytes);
            hash.update(&data);
            Scalar::from_bytes_mod_order_wide(&hash.finalize().into())
        };
        let plain = (ED25519_BASEPOINT_POINT * nonce).compress().to_bytes();
        let on_r = if on_key {
            EdwardsPoint::default()
        } else {
            torsion
        };
        let r_bytes = (ED25519_BASEPOINT_POINT * nonce + on_r)
            .compress()
            .to_bytes();
        let s = nonce + k_of(if keep_s { &plain } else { &r_bytes }) * a;
        let mut bytes = r_bytes.to_vec();
        bytes.extend_from_slice(s.as_bytes());
        set_signature(record, a_bytes, bytes);
        a_bytes
    }

    /// `record`'s signature: `bytes` by the Ed25519 key `key`.
    fn set_signature(record: &mut Record, key: [u8; 32], bytes: Vec<u8>) {
        let signature = ssh_key::Signature::new(ssh_key::Algorithm::Ed25519, bytes).unwrap();
        let key = KeyData::Ed25519(ssh_key::public::Ed25519PublicKey(key));
        let sig = SshSig::new(key, NAMESPACE, HashAlg::Sha512, signature).unwrap();
        record.sig = from_armored(&sig.to_pem(LineEnding::LF).unwrap());
        assert!(record.sig.is_some());
    }

    fn trust_of(key: [u8; 32]) -> Arc<Trust> {
        let key = KeyData::Ed25519(ssh_key::public::Ed25519PublicKey(key));
        let public = ssh_key::PublicKey::new(key, "").to_openssh().unwrap();
        let file = format!("{ADA} namespaces=\"kapi\" {public}\n");
        Trust::new(Mode::Signed, "p", file.as_bytes())
    }

    /// A tiny deterministic generator (xorshift64*), for the batch
    /// splits below.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
        }
        fn shuffle<T>(&mut self, items: &mut [T]) {
            for i in (1..items.len()).rev() {
                items.swap(i, self.below(i + 1));
            }
        }
    }

    #[test]
    fn a_small_order_component_gets_the_same_verdict_alone_and_in_every_batch() {
        use curve25519_dalek::constants::EIGHT_TORSION;
        use ed25519_dalek::Verifier;
        let seed = [7; 32];
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
        let trust = trust_in(&key, None);
        let mates: Vec<Record> = (1..=12)
            .map(|n| {
                let mut r = keep(n, "p");
                sign(&key, &mut r);
                r
            })
            .collect();
        // (torsion on R or on A, s made for R + T or kept)
        for (on_key, keep_s) in [(false, false), (false, true), (true, false)] {
            for (t, torsion) in EIGHT_TORSION.iter().enumerate().skip(1) {
                let mut crafted = keep(100 + t as u64, "p");
                let a_bytes = sign_with_torsion(&seed, &mut crafted, *torsion, on_key, keep_s);
                let trust = if on_key {
                    trust_of(a_bytes)
                } else {
                    trust.clone()
                };
                let want = if keep_s {
                    Verdict::BadSignature
                } else {
                    Verdict::Signed(ADA.into())
                };
                let alone = trust.judge(&crafted, wanted(&crafted).unwrap());
                assert_eq!(alone, want, "T{t} alone, on key {on_key}, s kept {keep_s}");
                // ssh-keygen's cofactorless equation refuses it (on A, it
                // sees -[k]T, which vanishes when T's order divides k).
                let sig = decode(crafted.sig.as_deref().unwrap()).unwrap();
                let data = SshSig::signed_data(
                    NAMESPACE,
                    HashAlg::Sha512,
                    crafted.signed_bytes().as_bytes(),
                )
                .unwrap();
                let dalek = ed25519_dalek::Signature::try_from(sig.signature()).unwrap();
                let verifying = ed25519_dalek::VerifyingKey::from_bytes(&a_bytes).unwrap();
                if !on_key {
                    assert!(verifying.verify(&data, &dalek).is_err(), "T{t}");
                }
                // Every position, three sets of batch mates (signed by
                // the key listed, or not, as the trust has it).
                for offset in [0, 4, 8] {
                    for at in 0..4 {
                        let mut batch: Vec<&Record> = mates[offset..offset + 3].iter().collect();
                        batch.insert(at, &crafted);
                        let items: Vec<_> =
                            batch.iter().map(|r| (*r, wanted(r).unwrap())).collect();
                        let verdicts = trust.judge_many(&items);
                        assert_eq!(verdicts[at], want, "T{t} at {at}, mates {offset}");
                    }
                }
            }
        }
    }

    /// ℓ, the order of the base point, little-endian.
    const ELL: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];

    #[test]
    fn batch_verdicts_are_single_verdicts_for_any_split() {
        assert_eq!(Scalar::from_bytes_mod_order(ELL), Scalar::ZERO);
        use curve25519_dalek::constants::EIGHT_TORSION;
        let seed = [7; 32];
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
        let eve = PrivateKey::from(Ed25519Keypair::from_seed(&[9; 32]));
        let ada_key = Ed25519Keypair::from_seed(&seed).public.0;
        let trust = trust_in(&key, None);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut records = Vec::new();
        for n in 1..=150 {
            let mut r = keep(n, "p");
            match n % 15 {
                // Altered after it was signed.
                1 => {
                    sign(&key, &mut r);
                    r.at = keep(n + 1000, "p").at;
                }
                // Eve's signature, naming Ada's key.
                2 => {
                    sign(&eve, &mut r);
                    let sig = decode(r.sig.as_deref().unwrap()).unwrap();
                    set_signature(&mut r, ada_key, sig.signature().as_bytes().to_vec());
                }
                // s + ℓ: not canonical.
                3 => {
                    sign(&key, &mut r);
                    let sig = decode(r.sig.as_deref().unwrap()).unwrap();
                    let mut bytes = sig.signature().as_bytes().to_vec();
                    let mut s = [0u8; 32];
                    s.copy_from_slice(&bytes[32..]);
                    let mut carry = 0u16;
                    for (b, l) in s.iter_mut().zip(&ELL) {
                        let sum = u16::from(*b) + u16::from(*l) + carry;
                        *b = sum as u8;
                        carry = sum >> 8;
                    }
                    bytes[32..].copy_from_slice(&s);
                    set_signature(&mut r, ada_key, bytes);
                }
                // A small-order component on R, s made for it.
                4 => {
                    let t = EIGHT_TORSION[1 + rng.below(7)];
                    sign_with_torsion(&seed, &mut r, t, false, false);
                }
                // The same, s kept: bad.
                5 => {
                    let t = EIGHT_TORSION[1 + rng.below(7)];
                    sign_with_torsion(&seed, &mut r, t, false, true);
                }
                _ => sign(&key, &mut r),
            }
            records.push(r);
        }
        let alone: Vec<Verdict> = records
            .iter()
            .map(|r| trust.judge(r, wanted(r).unwrap()))
            .collect();
        let bad = alone
            .iter()
            .filter(|v| **v == Verdict::BadSignature)
            .count();
        assert_eq!(bad, 40, "altered, Eve's, s + ℓ, s kept");
        // The fold's batches, over shuffled logs.
        for _ in 0..4 {
            let mut order: Vec<usize> = (0..records.len()).collect();
            rng.shuffle(&mut order);
            let items: Vec<_> = order
                .iter()
                .map(|&i| (&records[i], wanted(&records[i]).unwrap()))
                .collect();
            let want: Vec<Verdict> = order.iter().map(|&i| alone[i].clone()).collect();
            assert_eq!(trust.judge_many(&items), want);
        }
        // The batch equation itself, over random splits.
        let equations: Vec<Equation> = records
            .iter()
            .filter_map(|r| {
                let sig = decode(r.sig.as_deref()?)?;
                trust.equation(&sig, r.signed_bytes().as_bytes())?
            })
            .collect();
        assert_eq!(equations.len(), 140, "all but the ten s + ℓ");
        for _ in 0..8 {
            let mut shuffled = equations.clone();
            rng.shuffle(&mut shuffled);
            let mut rest = &shuffled[..];
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at((1 + rng.below(20)).min(rest.len()));
                let single = chunk.iter().all(Equation::holds);
                assert_eq!(
                    Equation::all_hold(chunk),
                    single,
                    "{} equations",
                    chunk.len()
                );
                rest = tail;
            }
        }
    }
}
