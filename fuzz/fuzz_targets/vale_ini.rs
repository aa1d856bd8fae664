//! A `.vale.ini` from untrusted bytes: its StylesPath never leaves the
//! repository.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(path) = kapi::formats::vale::styles_path(text)
    {
        assert!(!path.starts_with('/'), "absolute StylesPath {path:?}");
        assert!(
            !path.split('/').any(|p| p == ".." || p.is_empty()),
            "StylesPath climbs out: {path:?}"
        );
    }
});
