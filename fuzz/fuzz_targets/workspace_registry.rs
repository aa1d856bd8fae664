//! The workspace registry (`$XDG_DATA_HOME/kapi/repositories.jsonl`) from
//! untrusted bytes, read as every check, hook and write reads it: each
//! path once (the latest line wins), bad or overlong lines skipped.
#![no_main]
use libfuzzer_sys::fuzz_target;

use kapi::context::workspace::registry::parse;

fuzz_target!(|data: &[u8]| {
    let (entries, skipped) = parse(data);
    let lines = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count();
    assert!(entries.len() + skipped <= lines);
    let mut seen = std::collections::HashSet::new();
    assert!(entries.iter().all(|e| seen.insert(&e.path)));
});
