//! What makes a record valid: its fields within the documented limits, its
//! id and instant a log's, and its kind's fields reading as a typed
//! operation ([`Op::of`]). Every record read from outside passes
//! [`Record::from_untrusted`]; every record the door builds passes
//! [`Record::validate_unminted`] before the store mints its id.

use super::op::Op;
use super::record::*;

/// Check one string against its limit.
fn within(what: &'static str, text: &str, limit: usize) -> Result<(), RecordError> {
    if text.len() > limit {
        return Err(RecordError::TooLong {
            what,
            bytes: text.len(),
            limit,
        });
    }
    Ok(())
}

fn within_opt(
    what: &'static str,
    text: &Option<impl AsRef<str>>,
    limit: usize,
) -> Result<(), RecordError> {
    text.as_ref()
        .map_or(Ok(()), |t| within(what, t.as_ref(), limit))
}

fn count(what: &'static str, count: usize, limit: usize) -> Result<(), RecordError> {
    if count > limit {
        return Err(RecordError::TooMany { what, count, limit });
    }
    Ok(())
}

impl Record {
    /// Parse and check one untrusted record.
    pub fn from_untrusted(bytes: &[u8]) -> Result<Record, RecordError> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(RecordError::Oversized { bytes: bytes.len() });
        }
        // A line is checked to be UTF-8 once, whole, and its strings then
        // taken as they are: decoding from bytes checks each string on its
        // own, which cost a tenth of a cold read of a long log (the check
        // is vectorized: the standard library's took 4% of a cold read).
        // The usage signals and check runs most of a long log holds are
        // read without serde when their lines are canonical
        // (`super::canonical`); serde reads the rest.
        let decoded = match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => match super::canonical::record(text) {
                Some(record) => Ok(record),
                None => serde_json::from_str(text),
            },
            Err(_) => serde_json::from_slice(bytes),
        };
        let record: Record = match decoded {
            Ok(record) => record,
            Err(e) => {
                // Say why: another version, or not a record at all.
                let value: serde_json::Value = serde_json::from_slice(bytes)
                    .map_err(|e| RecordError::Malformed(e.to_string()))?;
                return Err(match value.get("v").and_then(serde_json::Value::as_u64) {
                    Some(v) if v != u64::from(FORMAT_VERSION) => RecordError::UnknownVersion(v),
                    None => RecordError::Malformed("no format version `v`".into()),
                    Some(_) => RecordError::Malformed(e.to_string()),
                });
            }
        };
        // As stored, content in a blob is named, never repeated inline.
        if let Some(Subject::Terms {
            terms,
            blob: Some(_),
        }) = record.subject.as_deref()
            && !terms.is_empty()
        {
            return Err(RecordError::Invalid(
                "an import carries its rules inline or in a content blob, not both".into(),
            ));
        }
        record.validate()?;
        Ok(record)
    }

    /// The checks a record passes before it is written or folded.
    pub fn validate(&self) -> Result<(), RecordError> {
        if self.v != FORMAT_VERSION {
            return Err(RecordError::UnknownVersion(u64::from(self.v)));
        }
        if !super::id::is_id(&self.id) {
            return Err(RecordError::Invalid(
                super::id::IdError::Invalid(self.id.to_string()).to_string(),
            ));
        }
        // The log stamps `at` with the id's own instant: a record whose two
        // clocks disagree was not written by a log.
        let id_ms = super::id::time_of(&self.id) + super::id::EPOCH_MS;
        if super::id::parse_instant_ms(&self.at) != Some(id_ms) {
            return Err(RecordError::Invalid(format!(
                "`at` {} is not the instant of its id ({})",
                self.at,
                super::id::rfc3339_ms(id_ms)
            )));
        }
        self.validate_unminted()
    }

    /// Every check [`Record::validate`] makes but those of the id and
    /// instant the store has yet to mint: what the door checks of a record
    /// built from a draft, before it is appended.
    pub fn validate_unminted(&self) -> Result<(), RecordError> {
        let invalid = |m: String| Err(RecordError::Invalid(m));
        if self.v != FORMAT_VERSION {
            return Err(RecordError::UnknownVersion(u64::from(self.v)));
        }
        for (what, text) in [("project", &self.project), ("actor name", &self.actor.name)] {
            if text.is_empty() || text.len() > MAX_NAME {
                return invalid(format!("{what} must have 1 to {MAX_NAME} bytes"));
            }
        }
        self.check_lengths()?;
        for id in self.because.iter() {
            if !super::id::is_id(id) {
                return Err(RecordError::Invalid(
                    super::id::IdError::Invalid(id.clone()).to_string(),
                ));
            }
        }
        // Each kind's own fields, and the ids it names: it parses into its
        // typed operation.
        Op::of(self)?;
        // A target or `before` a kind does not use is still an id.
        for id in self.target.iter().chain(self.before.iter()) {
            if !super::id::is_id(id) {
                return Err(RecordError::Invalid(
                    super::id::IdError::Invalid(id.to_string()).to_string(),
                ));
            }
        }
        if let Some(Subject::Term { preferred, avoid }) = self.subject.as_deref() {
            if preferred.trim().is_empty() || avoid.is_empty() || avoid.len() > MAX_LIST {
                return invalid("a term rule has a form to use and 1 to 256 forms to avoid".into());
            }
            if avoid.iter().any(|a| a.trim().is_empty() || a == preferred) {
                return invalid("an avoided form is empty or the same as the form to use".into());
            }
        }
        if let Some(Subject::Terms { terms, .. }) = self.subject.as_deref() {
            if terms.len() > MAX_TERMS {
                return invalid(format!(
                    "an import carries at most {MAX_TERMS} term rules; this one carries {}",
                    terms.len()
                ));
            }
            let bad = terms.iter().any(|t| {
                (t.avoid.is_empty()
                    && t.pattern
                        .as_ref()
                        .is_none_or(|p| p.is_empty() || p.len() > MAX_TEXT))
                    || t.avoid.len() > MAX_LIST
                    || t.avoid
                        .iter()
                        .any(|a| a.trim().is_empty() || Some(a) == t.preferred.as_ref())
                    || t.preferred.as_ref().is_some_and(|p| p.trim().is_empty())
            });
            if bad {
                return invalid(
                    "an imported term rule has an empty form or no form to avoid".into(),
                );
            }
        }
        if self.evidence.len() > MAX_LIST || self.because.len() > MAX_LIST {
            return invalid("too many evidence or because entries".into());
        }
        let too_long = self.note.as_ref().is_some_and(|n| n.len() > MAX_TEXT)
            || self
                .evidence
                .iter()
                .any(|e| e.quote.as_ref().is_some_and(|q| q.len() > MAX_TEXT));
        if too_long {
            return invalid(format!("a note or quote is longer than {MAX_TEXT} bytes"));
        }
        Ok(())
    }

    /// Every length the format documents, before anything is parsed
    /// further: nothing oversized reaches the fold, the checker or the
    /// rules block.
    fn check_lengths(&self) -> Result<(), RecordError> {
        within_opt("the actor's session", &self.actor.session, MAX_NAME)?;
        if let Some(sig) = &self.sig {
            within("the signature", sig, MAX_SIG)?;
            let base64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
            if sig.is_empty() || !sig.bytes().all(base64) {
                return Err(RecordError::Invalid(
                    "the signature `sig` is not base64".into(),
                ));
            }
        }
        match self.subject.as_deref() {
            Some(Subject::Term { preferred, avoid }) => {
                within("the form to use", preferred, MAX_FORM)?;
                for a in avoid {
                    within("a form to avoid", a, MAX_FORM)?;
                }
            }
            Some(Subject::Note { text }) => within("the note's text", text, MAX_TEXT)?,
            Some(Subject::Pair { source, target }) => {
                within("the pair's source", source, MAX_TEXT)?;
                within("the pair's target", target, MAX_TEXT)?;
            }
            Some(Subject::Terms { terms, blob }) => {
                if let Some(blob) = blob {
                    blob.check()?;
                }
                for t in terms {
                    within_opt("an imported form to use", &t.preferred, MAX_FORM)?;
                    for a in &t.avoid {
                        within("an imported form to avoid", a, MAX_FORM)?;
                    }
                }
            }
            None => {}
        }
        if let Some(c) = &self.correction {
            within("the correction's wording before", &c.from, MAX_TEXT)?;
            within("the correction's wording after", &c.to, MAX_TEXT)?;
        }
        count("evidence", self.evidence.len(), MAX_LIST)?;
        for e in &self.evidence {
            within_opt("an evidence path", &e.path, MAX_PATH)?;
            within_opt("an evidence unit", &e.unit, MAX_NAME)?;
            within_opt("a quote", &e.quote, MAX_TEXT)?;
            within_opt("an evidence SHA-256", &e.sha256, MAX_STAMP)?;
        }
        within_opt("the basis commit", &self.basis.commit, MAX_STAMP)?;
        count("the point's axes", self.scope.point.len(), MAX_LIST)?;
        for (axis, value) in &self.scope.point {
            within("a point's axis", axis, MAX_NAME)?;
            within("a point's value", value, MAX_NAME)?;
        }
        within_opt("valid_from", &self.scope.valid_from, MAX_STAMP)?;
        within_opt("valid_to", &self.scope.valid_to, MAX_STAMP)?;
        within_opt("the note", &self.note, MAX_TEXT)?;
        within("at", &self.at, MAX_STAMP)?;
        within_opt("the content address", &self.address, MAX_NAME)?;
        if let Some(s) = &self.signal {
            within_opt("the signal's commit", &s.commit, MAX_NAME)?;
            within_opt("the signal's PR", &s.pr, MAX_NAME)?;
            within_opt("the signal's merger", &s.merger, MAX_NAME)?;
        }
        count("because", self.because.len(), MAX_LIST)?;
        if let Some(c) = &self.check {
            within("the check's hook", &c.hook, MAX_NAME)?;
            count("the check's files", c.files.len(), MAX_CHECK_FILES)?;
            for f in &c.files {
                within("a checked file's path", f, MAX_PATH)?;
            }
            count("the check's findings", c.failing.len(), MAX_CHECK_FILES)?;
            for f in &c.failing {
                within("a finding's path", &f.path, MAX_PATH)?;
                within("a finding's rule", &f.rule, MAX_TEXT)?;
                within("a finding's quote", &f.quote, MAX_TEXT)?;
            }
        }
        Ok(())
    }
}
