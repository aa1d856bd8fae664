//! One operation read from untrusted bytes (a log line, an import line):
//! parsing never panics, and an accepted record survives its canonical
//! form unchanged and folds.
#![no_main]
use kapi::ops::Record;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = Record::from_untrusted(data) {
        let canonical = record.to_canonical_json();
        let again = Record::from_untrusted(canonical.as_bytes())
            .expect("the canonical form of an accepted record is accepted");
        assert_eq!(again, record, "canonical form changed the record");
        if let Some(subject) = &record.subject {
            let _ = subject.describe();
        }
        let _ = kapi::ops::fold(vec![record]);
    }
});
