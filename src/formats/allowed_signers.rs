//! git's allowed-signers file (`gpg.ssh.allowedSignersFile`), as
//! ssh-keygen(1) describes it under ALLOWED SIGNERS: one key a line,
//!
//! ```text
//! principals [options] keytype base64-key [comment]
//! ada@example.com,ada@corp.example namespaces="git,kapi",valid-before="20270101Z" ssh-ed25519 AAAA… ada
//! ```
//!
//! `principals` is a pattern list (`*`, `?`, `!` to exclude, as
//! ssh_config(5) PATTERNS), quoted or not; the options are `namespaces`,
//! `valid-after`, `valid-before` and `cert-authority`; blank lines and
//! lines starting with `#` are comments. The key is read by `ssh-key`
//! (RustCrypto), the framing here. One bad line is named and skipped,
//! never hiding the others. Unlike ssh-keygen, a time without `Z` is read
//! as UTC too: a fold must give every machine one answer, whatever its
//! time zone.

use ssh_key::PublicKey;

/// The largest allowed-signers file kapi reads.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// The longest line (a key with its options and comment).
const MAX_LINE: usize = 16 * 1024;

/// One key the file allows, with what it may sign.
#[derive(Debug, Clone)]
pub struct AllowedSigner {
    /// The line it was read from (1-based).
    pub line: usize,
    /// The principals pattern list, as written.
    pub principals: String,
    /// The namespaces pattern list (`None`: every namespace).
    pub namespaces: Option<String>,
    /// Unix milliseconds from which the key signs (inclusive).
    pub valid_after: Option<u64>,
    /// Unix milliseconds after which the key no longer signs.
    pub valid_before: Option<u64>,
    /// A certificate authority's key. kapi takes no certificates: such a
    /// line is read as a bad line, named by `kapi trust list` and doctor.
    pub cert_authority: bool,
    pub key: PublicKey,
}

/// A line that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub why: String,
}

/// What a file holds: the keys read, and the lines skipped.
#[derive(Debug, Clone, Default)]
pub struct AllowedSigners {
    pub signers: Vec<AllowedSigner>,
    pub bad: Vec<BadLine>,
}

impl AllowedSigner {
    /// Whether `principal` is one this key signs for.
    pub fn allows_principal(&self, principal: &str) -> bool {
        match_pattern_list(principal, &self.principals)
    }

    /// Whether the key signs in `namespace`.
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        self.namespaces
            .as_deref()
            .is_none_or(|list| match_pattern_list(namespace, list))
    }

    /// Whether the key signed validly at `at_ms` (Unix milliseconds).
    pub fn valid_at(&self, at_ms: u64) -> bool {
        self.valid_after.is_none_or(|after| at_ms >= after)
            && self.valid_before.is_none_or(|before| at_ms <= before)
    }
}

/// Read a whole file (at most [`MAX_FILE_BYTES`]; the caller caps the read).
pub fn parse(bytes: &[u8]) -> AllowedSigners {
    let mut out = AllowedSigners::default();
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE_BYTES)]);
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.len() > MAX_LINE {
            out.bad.push(BadLine {
                line: line_no,
                why: format!("longer than {MAX_LINE} bytes"),
            });
            continue;
        }
        match parse_line(trimmed, line_no) {
            Ok(signer) => out.signers.push(signer),
            Err(why) => out.bad.push(BadLine { line: line_no, why }),
        }
    }
    out
}

/// One line: principals, options (if the next word is not a key type),
/// the key.
pub fn parse_line(line: &str, line_no: usize) -> Result<AllowedSigner, String> {
    let (principals, rest) = word(line)?;
    if principals.is_empty() {
        return Err("no principals".into());
    }
    let rest = rest.trim_start();
    let (options, key) = match PublicKey::from_openssh(rest) {
        Ok(key) => (None, key),
        Err(_) => {
            // Not a key: options first, then the key.
            let (options, key) = word(rest)?;
            let key = PublicKey::from_openssh(key.trim_start())
                .map_err(|e| format!("no public key after the principals and options ({e})"))?;
            (Some(options), key)
        }
    };
    let mut signer = AllowedSigner {
        line: line_no,
        principals,
        namespaces: None,
        valid_after: None,
        valid_before: None,
        cert_authority: false,
        key,
    };
    if let Some(options) = options {
        apply_options(&mut signer, &options)?;
    }
    if signer.cert_authority {
        return Err("cert-authority lines are not supported: kapi verifies a signer's own key, not SSH certificates; list each person's key on a line of its own (`kapi trust add`)".into());
    }
    supported(&signer.key.algorithm())?;
    usable(&signer.key)?;
    Ok(signer)
}

/// Whether `key` can vouch for anything: an Ed25519 key (or its FIDO
/// form) must be a point on the curve of more than small order. A
/// small-order ("weak") key, such as the identity point, verifies
/// signatures nobody made: with it, `s = 0` and a small-order `R` satisfy
/// the cofactored equation for every message, so a line listing one
/// would let anyone sign for its principals.
pub fn usable(key: &PublicKey) -> Result<(), String> {
    use ssh_key::public::KeyData;
    let point = match key.key_data() {
        KeyData::Ed25519(key) => key.0,
        KeyData::SkEd25519(key) => key.public_key().0,
        _ => return Ok(()),
    };
    match ed25519_dalek::VerifyingKey::from_bytes(&point) {
        Err(_) => Err("the Ed25519 key is not a point on the curve: no signature by it verifies; list the key from the signer's .pub file (`ssh-keygen -y -f <key>` prints it)".into()),
        Ok(verifying) if verifying.is_weak() => Err("the Ed25519 key is a small-order (weak) point, which verifies signatures nobody made: kapi refuses it; make a real key with `ssh-keygen -t ed25519`".into()),
        Ok(_) => Ok(()),
    }
}

/// Whether kapi verifies signatures by keys of `algorithm`: Ed25519 and
/// ECDSA P-256, and their FIDO (`sk-`) forms. RSA is not among them
/// (its verifier would add num-bigint and the rsa crate, with
/// RUSTSEC-2023-0071, to every build), nor DSA or the other curves.
pub fn supported(algorithm: &ssh_key::Algorithm) -> Result<(), String> {
    use ssh_key::{Algorithm, EcdsaCurve};
    match algorithm {
        Algorithm::Ed25519
        | Algorithm::SkEd25519
        | Algorithm::SkEcdsaSha2NistP256
        | Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP256,
        } => Ok(()),
        Algorithm::Rsa { .. } => Err(
            "RSA keys are not supported, use ed25519 or ecdsa: make one with `ssh-keygen -t ed25519` (or `-t ed25519-sk` for a key that needs a touch)".into(),
        ),
        other => Err(format!(
            "{other} keys are not supported, use ed25519 or ecdsa (P-256): make one with `ssh-keygen -t ed25519` (or `-t ed25519-sk` for a key that needs a touch)"
        )),
    }
}

/// The first word of `text` and what follows it: up to white space, with
/// double-quoted stretches taken whole (quotes removed only around a
/// principals word that is quoted entirely, as ssh-keygen does).
fn word(text: &str) -> Result<(String, &str), String> {
    if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted
            .find('"')
            .ok_or_else(|| "an unterminated quote".to_owned())?;
        return Ok((quoted[..end].to_owned(), &quoted[end + 1..]));
    }
    let mut in_quote = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => in_quote = !in_quote,
            c if c.is_whitespace() && !in_quote => return Ok((text[..i].to_owned(), &text[i..])),
            _ => {}
        }
    }
    if in_quote {
        return Err("an unterminated quote".into());
    }
    Ok((text.to_owned(), ""))
}

/// `cert-authority,namespaces="kapi",valid-after="20260101Z"`.
fn apply_options(signer: &mut AllowedSigner, options: &str) -> Result<(), String> {
    let mut rest = options;
    while !rest.is_empty() {
        // One option: up to a comma outside quotes.
        let mut end = rest.len();
        let mut in_quote = false;
        for (i, c) in rest.char_indices() {
            match c {
                '"' => in_quote = !in_quote,
                ',' if !in_quote => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let option = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        let (name, value) = match option.split_once('=') {
            Some((name, value)) => {
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .ok_or_else(|| format!("the option {name} wants a quoted value"))?;
                (name.to_ascii_lowercase(), Some(value))
            }
            None => (option.to_ascii_lowercase(), None),
        };
        match (name.as_str(), value) {
            ("cert-authority", None) => signer.cert_authority = true,
            ("namespaces", Some(v)) => signer.namespaces = Some(v.to_owned()),
            ("valid-after", Some(v)) => signer.valid_after = Some(timestamp(v)?),
            ("valid-before", Some(v)) => signer.valid_before = Some(timestamp(v)?),
            _ => return Err(format!("an option ssh-keygen does not know: {option}")),
        }
    }
    Ok(())
}

/// `YYYYMMDD`, `YYYYMMDDHHMM` or `YYYYMMDDHHMMSS`, with an optional `Z`,
/// as Unix milliseconds (UTC either way).
pub fn timestamp(text: &str) -> Result<u64, String> {
    let bad =
        || format!("the time \"{text}\" is not YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS (with Z)");
    let digits = text.strip_suffix(['Z', 'z']).unwrap_or(text);
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| digits.get(r).and_then(|d| d.parse::<u32>().ok());
    let (year, month, day) = (num(0..4).ok_or_else(bad)?, num(4..6), num(6..8));
    let month = time::Month::try_from(month.ok_or_else(bad)? as u8).map_err(|_| bad())?;
    let date = time::Date::from_calendar_date(year as i32, month, day.ok_or_else(bad)? as u8)
        .map_err(|_| bad())?;
    let (hour, minute, second) = (
        num(8..10).unwrap_or(0),
        num(10..12).unwrap_or(0),
        num(12..14).unwrap_or(0),
    );
    let clock = time::Time::from_hms(hour as u8, minute as u8, second as u8).map_err(|_| bad())?;
    let at = time::PrimitiveDateTime::new(date, clock).assume_utc();
    let ms = at.unix_timestamp().checked_mul(1000).ok_or_else(bad)?;
    u64::try_from(ms).map_err(|_| bad())
}

/// ssh's `match_pattern_list`: a comma-separated list of patterns, `!`
/// negating one; a negated match refuses whatever else matches.
pub fn match_pattern_list(text: &str, list: &str) -> bool {
    let mut matched = false;
    for pattern in list.split(',') {
        let pattern = pattern.trim();
        if let Some(negated) = pattern.strip_prefix('!') {
            if match_pattern(text.as_bytes(), negated.as_bytes()) {
                return false;
            }
        } else if match_pattern(text.as_bytes(), pattern.as_bytes()) {
            matched = true;
        }
    }
    matched
}

/// `*` (any run) and `?` (any one byte), iteratively with one backtrack
/// point: linear in practice, never exponential.
fn match_pattern(text: &[u8], pattern: &[u8]) -> bool {
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            t += 1;
            p += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEWCHNilZiYCk7Of5P6qp6aleSrl2EVJ6TCR63EOOq9M ada";

    /// An OpenSSH `ssh-ed25519` line for the 32 bytes `point`.
    fn ed25519_line(point: [u8; 32]) -> String {
        let key = PublicKey::from(ssh_key::public::KeyData::Ed25519(
            ssh_key::public::Ed25519PublicKey(point),
        ));
        key.to_openssh().unwrap()
    }

    #[test]
    fn a_weak_or_off_curve_ed25519_key_is_a_bad_line() {
        let mut identity = [0u8; 32];
        identity[0] = 1;
        // y = 2 has no x on the curve: not a point at all.
        let mut off_curve = [0u8; 32];
        off_curve[0] = 2;
        let file = format!(
            "ada@example.com {KEY}\nmallory@example.com {}\neve@example.com {}\n",
            ed25519_line(identity),
            ed25519_line(off_curve)
        );
        let read = parse(file.as_bytes());
        assert_eq!(read.signers.len(), 1, "{:?}", read.bad);
        assert_eq!(read.bad.len(), 2, "{:?}", read.bad);
        assert_eq!(read.bad[0].line, 2);
        assert!(read.bad[0].why.contains("small-order"), "{:?}", read.bad);
        assert_eq!(read.bad[1].line, 3);
        assert!(read.bad[1].why.contains("not a point"), "{:?}", read.bad);
    }

    #[test]
    fn lines_as_ssh_keygen_reads_them() {
        let file = format!(
            "# team\n\nada@example.com {KEY}\n\"bo@example.com,*@ci.example\" namespaces=\"git,kapi\",valid-after=\"20260101\",valid-before=\"20270101000000Z\" {KEY}\nci cert-authority {KEY}\nbroken\nx unknown=\"1\" {KEY}\n"
        );
        let read = parse(file.as_bytes());
        assert_eq!(read.signers.len(), 2, "{:?}", read.bad);
        assert_eq!(
            read.bad.iter().map(|b| b.line).collect::<Vec<_>>(),
            [5, 6, 7]
        );
        assert!(
            read.bad[0]
                .why
                .starts_with("cert-authority lines are not supported")
        );
        let ada = &read.signers[0];
        assert!(ada.allows_principal("ada@example.com") && !ada.allows_principal("ada"));
        assert!(ada.allows_namespace("kapi") && ada.valid_at(0));
        let bo = &read.signers[1];
        assert!(bo.allows_principal("x@ci.example") && bo.allows_principal("bo@example.com"));
        assert!(bo.allows_namespace("kapi") && !bo.allows_namespace("file"));
        let jan = timestamp("20260101").unwrap();
        assert!(!bo.valid_at(jan - 1) && bo.valid_at(jan));
        assert!(bo.valid_at(timestamp("20270101Z").unwrap()));
        assert!(!bo.valid_at(timestamp("20270101000001").unwrap()));
    }

    #[test]
    fn patterns_match_as_ssh_does() {
        assert!(match_pattern_list("ada@example.com", "*@example.com"));
        assert!(!match_pattern_list(
            "ada@example.com",
            "*@example.com,!ada@*"
        ));
        assert!(match_pattern_list("ci", "ci"));
        assert!(!match_pattern_list("cid", "ci"));
        assert!(match_pattern_list("ab", "a?"));
        // A pattern built to backtrack stays fast.
        let text = "a".repeat(5000);
        assert!(!match_pattern_list(&text, &format!("{}b", "*a".repeat(50))));
    }

    use proptest::prelude::*;

    /// What a file of `bytes` may hold at most: one key or one bad line a
    /// line, never more (the parse is bounded by its input).
    fn bounded(bytes: &[u8]) -> Result<(), TestCaseError> {
        let read = parse(bytes);
        let lines = bytes.split(|&b| b == b'\n').count();
        prop_assert!(read.signers.len() + read.bad.len() <= lines);
        for bad in &read.bad {
            prop_assert!(bad.why.len() <= 1024, "{}", bad.why);
        }
        for s in &read.signers {
            // What the fold asks of a key never panics either.
            let _ = s.allows_principal("ada@example.com") && s.allows_namespace("kapi");
            let _ = s.valid_at(0) || s.valid_at(u64::MAX);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any bytes (the committed file is anyone's who can push to the
        /// default branch) parse without a panic.
        #[test]
        fn any_bytes_parse_bounded(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            bounded(&bytes)?;
        }

        /// Lines made of the format's own pieces, in any order: quotes,
        /// options, times, patterns, keys whole and cut.
        #[test]
        fn lines_of_the_formats_pieces_parse_bounded(pieces in proptest::collection::vec(prop_oneof![
            Just("\"".to_owned()), Just(",".to_owned()), Just(" ".to_owned()), Just("=".to_owned()),
            Just("\n".to_owned()), Just("#".to_owned()), Just("*".to_owned()), Just("!".to_owned()),
            Just("namespaces=\"kapi\"".to_owned()), Just("valid-before=".to_owned()),
            Just("valid-after=\"20260101Z\"".to_owned()), Just("cert-authority".to_owned()),
            Just("ssh-ed25519".to_owned()), Just("ssh-rsa".to_owned()), Just("ecdsa-sha2-nistp384".to_owned()),
            Just(KEY.to_owned()), Just(KEY[12..40].to_owned()), Just("AAAA".to_owned()),
            Just("99991399".to_owned()), Just("20260101235959Z".to_owned()),
            "[a-z@.*?!,]{0,12}", "[ -~]{0,24}",
        ], 0..48)) {
            bounded(pieces.concat().as_bytes())?;
        }
    }

    #[test]
    fn a_long_hostile_file_is_read_in_bounds() {
        // A megabyte of one unterminated quote, of patterns built to
        // backtrack, and of lines at the length limit and past it.
        let mut file = String::from("\"");
        file.push_str(&"x".repeat(MAX_FILE_BYTES / 4));
        file.push('\n');
        for _ in 0..64 {
            file.push_str(&format!("{} {KEY}\n", "*a".repeat(2000)));
        }
        file.push_str(&format!("{} {KEY}\n", "p".repeat(MAX_LINE + 1)));
        file.push_str(&"# c\n".repeat(MAX_FILE_BYTES));
        let read = parse(file.as_bytes());
        assert_eq!(read.signers.len(), 64);
        assert_eq!(read.bad.len(), 2, "{:?}", read.bad);
        let text = "a".repeat(2000);
        assert!(!read.signers[0].allows_principal(&format!("{text}b")));
    }

    #[test]
    fn rsa_and_other_keys_kapi_does_not_verify_are_named() {
        let rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC2u4GgB8mJ5S2Zz1x2y3Z4k5L6m7N8o9P0q1R2s3T4u5V6w7X8y9Z0a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g3H4i5J6k7L8m9N0o1P2q3R4s5T6u7V8w9X0y1Z2a3B4c5D6e7F8g9H0i1J2k3L4m5N6o7P8q9R0s1T2u3V4w5X6y7Z8a9B0c1D2e3F4g5H6i7J8k9L0m1N2o3P4q5R6s7T8u9V0w1X2y3Z4a5B6c7D8e9F0g1H2i3J4k5L6m7N8o9P0q1R2s3T4u5V6w7X8y9Z0 rsa";
        let read = parse(format!("ada@example.com {rsa}\n").as_bytes());
        assert!(read.signers.is_empty());
        assert_eq!(read.bad.len(), 1);
        // Either ssh-key reads it and kapi names the algorithm, or it
        // does not read it at all: never a key that would verify nothing.
        assert!(
            read.bad[0].why.starts_with("RSA keys are not supported")
                || read.bad[0].why.contains("no public key"),
            "{}",
            read.bad[0].why
        );
    }

    #[test]
    fn bad_times_are_named() {
        for bad in ["2026", "20261301", "20260230", "202601011261", "2026010a"] {
            assert!(timestamp(bad).is_err(), "{bad}");
        }
    }
}
