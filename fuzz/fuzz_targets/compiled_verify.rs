//! A compiled-context artifact given to `kapi context verify`, from
//! untrusted bytes, against a small fixed vault.
#![no_main]
use std::path::PathBuf;
use std::sync::OnceLock;

use kapi::compile::verify::{Input, VerifyOptions, verify_compiled};
use libfuzzer_sys::fuzz_target;

fn vault() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary vault").keep();
        std::fs::write(
            dir.join("D-001.md"),
            "---\nid: D-001\ntype: decision\nstatus: accepted\nsensitivity: public\n---\n# One\n\nBody.\n",
        )
        .expect("a note");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let options = VerifyOptions {
        today: time::macros::date!(2026 - 03 - 01),
        grant: kapi::vault::Grant::public(),
        expected: Default::default(),
        scope: Default::default(),
        layout: Default::default(),
    };
    let _ = verify_compiled(vault(), Input::Bytes(data), &options);
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = verify_compiled(vault(), Input::Value(&value), &options);
    }
});
