//! `kapi.toml` from untrusted bytes, and what is derived from it: the
//! prose globs, the rules files, the vault root, the `[[points]]` map and
//! the typed axes (`[axes]`), with the same bytes read as a gazetteer.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(config) = kapi::config::Config::parse(text)
    {
        let _ = config.check.prose_globs();
        let _ = config.context.rules_files();
        let _ = config.vault_root();
        let _ = kapi::context::PointMap::from_config(&config.points);
        let _ = kapi::context::point_of(&config, "docs/app/index.md");
        if let Ok(space) = kapi::ops::axes::Space::build(&config.axes, |_| Ok(text.to_owned())) {
            for (_, axis) in space.axes() {
                for (a, _) in axis.values().into_iter().take(8) {
                    for (b, _) in axis.values().into_iter().take(8) {
                        let _ = axis.contains(a, b);
                        let _ = axis.overlaps(a, b);
                        let _ = axis.places(a);
                        let _ = axis.outermost(b);
                    }
                }
                let _ = axis.overlaps("13-17", "-4");
                let _ = axis.legal("9223372036854775807-");
            }
        }
    }
});
