//! `kapi.toml` from untrusted bytes, and what is derived from it: the
//! prose globs, the rules files, the vault root and the `[[points]]` map.
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
    }
});
