//! A term list (`kapi store import --from terms`) from untrusted bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kapi::formats::parse_term_list(text);
    }
});
