//! The matcher's plans kept across processes (`.git/kapi/rules.cache`): a
//! check of one page by 5,000 rules spent most of its time deriving, from
//! every form of every rule, what its automaton is built from
//! ([`crate::check::matcher::Plan`]); the next check by the same rules reads
//! it here instead.
//!
//! The file is derived (safe to delete, never a source of truth) and
//! hostile input like every derived file, and a plan it holds is obeyed:
//! it says which forms the automaton looks for, so a forged one could make
//! a check pass that should fail. So each plan is keyed by the SHA-256 of
//! the code that derived it and of everything in the rules it is derived
//! from ([`crate::check::matcher::Plan::key`]: a plan for other rules, or
//! by other code, is never found), and the whole file is tagged with the
//! repository's secret (`.git/kapi/trust.secret`, as `trust.verdicts`
//! is): the tag is the SHA-256 of the secret and of the SHA-256 of every
//! byte before it (a tag of fixed-length input, so no tag can be extended
//! to longer bytes). A file that does not check out in every respect
//! (forged or copied from another clone, cut short, grown, a plan that
//! does not fit its rules) is not read, and the plans are derived again
//! and the file written anew.
//!
//! Format: the magic line, then entries (key, 32 bytes; the plan's length,
//! 8 bytes little-endian; the plan, [`Plan::to_bytes`]), then the tag (32 bytes).

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::check::matcher::{Plan, PlanKey, Plans};

pub(crate) const NAME: &str = "rules.cache";
const MAGIC: &[u8] = b"kapi rules cache 2\n";
/// The largest file read (a plan for 100,000 rules is some 20 MiB).
const MAX_BYTES: u64 = 128 * 1024 * 1024;
/// Plans kept: one check builds one or two (the prose's and the raw
/// text's, or a counting matcher's), and files of other scopes a few more.
const MAX_ENTRIES: usize = 8;

/// The plans read from the file, and those built since.
pub struct RulesCache {
    dir: PathBuf,
    secret: [u8; 32],
    /// Each plan's key and its bytes ([`Plan::to_bytes`]), as read.
    held: Vec<(PlanKey, Vec<u8>)>,
    /// Plans built by this process, not yet written.
    fresh: Vec<(PlanKey, Vec<u8>)>,
}

impl RulesCache {
    /// The cache of the repository whose kapi directory is `kapi_dir`;
    /// `None` when there is no secret to tag it with (a read-only
    /// repository): every plan is derived then.
    pub fn open(kapi_dir: &Path) -> Option<Self> {
        let secret = crate::store::verdicts::secret(kapi_dir)?;
        let held = read(&kapi_dir.join(NAME), &secret).unwrap_or_default();
        Some(Self {
            dir: kapi_dir.to_path_buf(),
            secret,
            held,
            fresh: Vec::new(),
        })
    }

    /// Write the plans built since the file was read (or last written),
    /// newest first, beside those read, up to [`MAX_ENTRIES`]. The file is
    /// derived: a failure to write loses nothing but time.
    pub fn save(&mut self) {
        if self.fresh.is_empty() {
            return;
        }
        let mut entries = std::mem::take(&mut self.fresh);
        for (key, plan) in std::mem::take(&mut self.held) {
            if !entries.iter().any(|(k, _)| *k == key) {
                entries.push((key, plan));
            }
        }
        entries.truncate(MAX_ENTRIES);
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        for (key, plan) in &entries {
            out.extend_from_slice(key);
            out.extend_from_slice(&(plan.len() as u64).to_le_bytes());
            out.extend_from_slice(plan);
        }
        let tag = tag(&self.secret, &out);
        out.extend_from_slice(&tag);
        if out.len() as u64 <= MAX_BYTES {
            let _ = std::fs::create_dir_all(&self.dir);
            let _ = crate::atomic::replace_derived(&self.dir.join(NAME), |w| {
                std::io::Write::write_all(w, &out)
            });
        }
        self.held = entries;
    }
}

impl Plans for RulesCache {
    fn active(&self) -> bool {
        true
    }

    fn find(&mut self, key: &PlanKey) -> Option<Plan> {
        let (_, bytes) = self.held.iter().find(|(k, _)| k == key)?;
        Plan::from_bytes(bytes)
    }

    fn keep(&mut self, key: PlanKey, plan: &Plan) {
        self.fresh.retain(|(k, _)| *k != key);
        self.fresh.insert(0, (key, plan.to_bytes()));
    }
}

/// The tag of a file whose bytes before the tag are `body`.
fn tag(secret: &[u8; 32], body: &[u8]) -> [u8; 32] {
    let inner: [u8; 32] = Sha256::digest(body).into();
    let mut outer = Sha256::new();
    outer.update(b"kapi rules cache tag\0");
    outer.update(secret);
    outer.update(inner);
    outer.finalize().into()
}

/// The entries of the file at `path`, when it checks out in every respect.
fn read(path: &Path, secret: &[u8; 32]) -> Option<Vec<(PlanKey, Vec<u8>)>> {
    let file = crate::fsutil::open_regular(path, crate::fsutil::Links::Refuse).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    parse(&bytes, secret)
}

fn parse(bytes: &[u8], secret: &[u8; 32]) -> Option<Vec<(PlanKey, Vec<u8>)>> {
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let (body, given) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if tag(secret, body) != *given {
        return None;
    }
    let mut at = body.strip_prefix(MAGIC)?;
    let mut entries = Vec::new();
    while !at.is_empty() {
        let (key, after) = at.split_first_chunk::<32>()?;
        let (len, after) = after.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        let (plan, after) = after.split_at_checked(len)?;
        entries.push((*key, plan.to_vec()));
        at = after;
        if entries.len() > MAX_ENTRIES {
            return None;
        }
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_only_when_it_checks_out() {
        let secret = [3u8; 32];
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&[9u8; 32]);
        body.extend_from_slice(&3u64.to_le_bytes());
        body.extend_from_slice(b"abc");
        let mut file = body.clone();
        file.extend_from_slice(&tag(&secret, &body));
        let entries = parse(&file, &secret).unwrap();
        assert_eq!(entries, vec![([9u8; 32], b"abc".to_vec())]);
        // Another repository's secret: nothing.
        assert!(parse(&file, &[4u8; 32]).is_none());
        // One byte changed anywhere, cut short, grown: nothing.
        for i in 0..file.len() {
            let mut forged = file.clone();
            forged[i] ^= 1;
            assert!(parse(&forged, &secret).is_none(), "byte {i}");
        }
        for n in 0..file.len() {
            assert!(parse(&file[..n], &secret).is_none());
        }
        let mut grown = file.clone();
        grown.push(0);
        assert!(parse(&grown, &secret).is_none());
        // A length past the end, even with a good tag: nothing, no panic.
        let mut long = MAGIC.to_vec();
        long.extend_from_slice(&[9u8; 32]);
        long.extend_from_slice(&u64::MAX.to_le_bytes());
        let t = tag(&secret, &long);
        long.extend_from_slice(&t);
        assert!(parse(&long, &secret).is_none());
    }
}
