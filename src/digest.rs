//! Hashing and canonical JSON, shared by the vault projections, the
//! manifest and the serializer.

use sha2::{Digest, Sha256};

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// 32 bytes from 64 digits written as [`hex`] writes them (lower case);
/// `None` for anything else.
pub(crate) fn unhex32(hex: &[u8]) -> Option<[u8; 32]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// Whether `s` is written as [`hex`] writes: lower-case hex digits only.
pub(crate) fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Canonical JSON bytes: compact, keys sorted (serde_json's maps are
/// ordered), UTF-8 unescaped; no trailing newline.
pub(crate) fn canonical(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A running SHA-256 over a sequence of records.
#[derive(Default)]
pub(crate) struct Running(Sha256);

impl Running {
    pub fn add(&mut self, part: &[u8]) {
        self.0.update(part);
    }

    pub fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_sorts_keys_and_keeps_utf8() {
        let v = serde_json::json!({"b": 1, "a": "é\n"});
        assert_eq!(canonical(&v), "{\"a\":\"é\\n\",\"b\":1}".as_bytes());
        assert_eq!(sha256_hex(b"").len(), 64);
    }

    #[test]
    fn unhex32_reads_back_what_hex_writes_and_nothing_else() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        let written = hex(&bytes);
        assert_eq!(unhex32(written.as_bytes()), Some(bytes));
        for bad in [
            written.to_uppercase(),
            written[..62].to_owned(),
            format!("{written}0"),
            format!("+{}", &written[1..]),
            written.replacen('0', "g", 1),
        ] {
            assert_eq!(unhex32(bad.as_bytes()), None, "{bad}");
        }
    }
}
