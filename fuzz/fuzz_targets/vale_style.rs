//! A Vale substitution style (YAML) and a Vale vocabulary from untrusted
//! bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kapi::formats::parse_vale_substitution(text);
        let (accept, reject) = text.split_once('\0').unwrap_or((text, ""));
        if let Ok(v) = kapi::formats::Vocabulary::parse(Some(accept), Some(reject)) {
            let _ = v.rules();
        }
    }
});
