//! Signatures verified before (`.git/kapi/trust.verdicts`): a derived file
//! that spares a cold read (no fold checkpoint) the verification of every
//! signed decision again, read by [`crate::ops::trust::Memory`].
//!
//! The file is hostile input like every derived file, and more: an entry
//! says "this operation's signature verified for this principal", which
//! the fold would take instead of verifying. So an entry is never a
//! record's id or digest alone. Its tag is the SHA-256 of this
//! repository's secret (`.git/kapi/trust.secret`: 32 random bytes, made
//! on first use, readable by its owner only), the allowed-signers file's
//! digest, the bytes the operation's signature covers and the signature. A file
//! written without the secret (another clone's, or one made up) matches
//! nothing, and every verdict it claims is verified afresh; the file is
//! also keyed by the allowed-signers digest and carries a CRC-32 of its
//! bytes, and one that does not check out in every respect is not read at
//! all. Only verdicts that verified are kept: anything else is verified on
//! every cold read (whoever can write `.git/kapi` can write the fold
//! checkpoint too: docs/security.md).
//!
//! Format: the magic line, the digest line (64 hex), then entries (tag, 32
//! bytes; the principal's length, one byte; the principal), then the
//! CRC-32 of all before it (4 bytes, little-endian).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use compact_str::CompactString;

pub(super) const NAME: &str = "trust.verdicts";
const SECRET: &str = "trust.secret";
const MAGIC: &[u8] = b"kapi trust verdicts 2\n";
/// The largest file read (a million entries of a 30-byte principal).
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// A tag: which operation, under which allowed-signers file, verified.
pub type Tag = [u8; 32];

/// The repository's secret, made when there is none. `None` when it
/// cannot be read or made (a read-only repository): nothing is
/// remembered then.
pub fn secret(kapi_dir: &Path) -> Option<[u8; 32]> {
    let path = kapi_dir.join(SECRET);
    let read = |path: &Path| -> Option<[u8; 32]> {
        let bytes = crate::fsutil::read_capped(path, crate::fsutil::Links::Refuse).ok()?;
        <[u8; 32]>::try_from(bytes.as_slice()).ok()
    };
    if let Some(secret) = read(&path) {
        return Some(secret);
    }
    let mut fresh = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut fresh))
        .ok()?;
    std::fs::create_dir_all(kapi_dir).ok()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            if file
                .write_all(&fresh)
                .and_then(|()| file.sync_all())
                .is_err()
            {
                let _ = std::fs::remove_file(&path);
                return None;
            }
            Some(fresh)
        }
        // Another kapi made it meanwhile: take theirs.
        Err(_) => read(&path),
    }
}

/// The tag of a derived file kapi obeys without reading the log again
/// (the newest-id and project caches): the SHA-256 of what the file is
/// (`domain`), this repository's secret and the SHA-256 of the bytes it
/// vouches for (a tag of fixed-length input: no tag extends to longer
/// bytes). A file written without the secret (another clone's, or made
/// up) carries a tag that matches nothing.
pub fn tag(secret: &[u8; 32], domain: &str, body: &[u8]) -> Tag {
    use sha2::{Digest, Sha256};
    let inner: [u8; 32] = Sha256::digest(body).into();
    let mut outer = Sha256::new();
    outer.update(domain.as_bytes());
    outer.update([0]);
    outer.update(secret);
    outer.update(inner);
    outer.finalize().into()
}

/// The [`tag`] of `body` under this repository's secret, in hex; `None`
/// when there is no secret (nor can one be made).
pub fn tag_hex(kapi_dir: &Path, domain: &str, body: &[u8]) -> Option<String> {
    secret(kapi_dir).map(|secret| crate::digest::hex(&tag(&secret, domain, body)))
}

/// The entries of the file kept for `digest`, when it checks out (else
/// none: every signature is verified again).
pub fn load(kapi_dir: &Path, digest: &str) -> HashMap<Tag, CompactString> {
    let path = kapi_dir.join(NAME);
    let Ok(file) = crate::fsutil::open_regular(&path, crate::fsutil::Links::Refuse) else {
        return HashMap::new();
    };
    let mut bytes = Vec::new();
    if file.take(MAX_BYTES + 1).read_to_end(&mut bytes).is_err() {
        return HashMap::new();
    }
    parse(&bytes, digest).unwrap_or_default()
}

fn parse(bytes: &[u8], digest: &str) -> Option<HashMap<Tag, CompactString>> {
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let (body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32fast::hash(body).to_le_bytes() != crc {
        return None;
    }
    let rest = body.strip_prefix(MAGIC)?;
    let rest = rest.strip_prefix(digest.as_bytes())?.strip_prefix(b"\n")?;
    let mut entries = HashMap::new();
    let mut at = rest;
    while !at.is_empty() {
        let (tag, after) = at.split_first_chunk::<32>()?;
        let (&len, after) = after.split_first()?;
        let (principal, after) = after.split_at_checked(usize::from(len))?;
        entries.insert(*tag, std::str::from_utf8(principal).ok()?.into());
        at = after;
    }
    Some(entries)
}

/// Write `entries` as the file for `digest` (derived: not synced; a
/// failure to write loses nothing but time).
pub fn save<'a>(
    kapi_dir: &Path,
    digest: &str,
    entries: impl Iterator<Item = (&'a Tag, &'a CompactString)>,
) {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(digest.as_bytes());
    out.push(b'\n');
    for (tag, principal) in entries {
        let Ok(len) = u8::try_from(principal.len()) else {
            continue;
        };
        out.extend_from_slice(tag);
        out.push(len);
        out.extend_from_slice(principal.as_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    let _ = crate::atomic::replace_derived(&kapi_dir.join(NAME), |w| w.write_all(&out));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_only_when_it_checks_out() {
        let dir = tempfile::tempdir().unwrap();
        let tag = [7u8; 32];
        let ada = CompactString::from("ada@example.com");
        save(dir.path(), "d1", [(&tag, &ada)].into_iter());
        assert_eq!(load(dir.path(), "d1").get(&tag), Some(&ada));
        // Another allowed-signers file: nothing.
        assert!(load(dir.path(), "d2").is_empty());
        // One byte changed: nothing.
        let path = dir.path().join(NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len() - 10;
        bytes[n] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(dir.path(), "d1").is_empty());
        // Cut short, empty, or junk: nothing, never a panic.
        for junk in [&b""[..], b"kapi", MAGIC, &bytes[..bytes.len() / 2]] {
            assert!(parse(junk, "d1").is_none());
        }
    }

    #[test]
    fn the_secret_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let one = secret(dir.path()).unwrap();
        assert_eq!(secret(dir.path()), Some(one));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(SECRET))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0);
        }
        // A secret of the wrong length is not taken, nor replaced.
        std::fs::write(dir.path().join(SECRET), b"short").unwrap();
        assert_eq!(secret(dir.path()), None);
    }
}
