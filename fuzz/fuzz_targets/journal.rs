//! The journal (.git/kapi/journal) from untrusted bytes, read as the
//! committer reads it: torn lines set apart, the rest parsed, deduplicated
//! and folded.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = kapi::store::parse_journal(data);
    for line in &parsed.torn {
        assert!(kapi::ops::Record::from_untrusted(line).is_err());
    }
    assert!(parsed.records.windows(2).all(|w| w[0].id < w[1].id));
    let _ = kapi::store::journal_holds_any(data, &parsed.records);
    let _ = kapi::ops::fold(parsed.records);
});
