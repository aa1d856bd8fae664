//! Temporary files a killed writer left behind: loose objects it had not
//! finished (`.git/objects/.tmp*`, gix's temporary names; git's own
//! `tmp_obj_*` are git's to clean) and kapi's own half-written files under
//! `.git/kapi/` (`.<name>.kapi-tmp.<pid>` of `crate::atomic`, the
//! `<name>.tmp.<pid>` earlier versions wrote, `journal.new`). They are removed only by a
//! writer that holds the commit lock (every kapi writer writes objects under
//! it) and only when older than [`MIN_AGE`], so no live writer can still be
//! using one. The committing writer sweeps at most once per [`MIN_AGE`]
//! (`.git/kapi/swept` remembers when); `kapi store doctor --repair` sweeps
//! at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How old a temporary file must be before it is removed.
pub const MIN_AGE: Duration = Duration::from_secs(10 * 60);

const STAMP: &str = "swept";

fn old(path: &Path, now: SystemTime) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age >= MIN_AGE))
}

/// The temporary files a sweep would remove now.
pub fn leftovers(objects_dir: &Path, kapi_dir: &Path) -> Vec<PathBuf> {
    let now = SystemTime::now();
    let mut out = Vec::new();
    let named = |dir: &Path, keep: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            if keep(name) && entry.file_type().is_ok_and(|t| t.is_file()) && old(&path, now) {
                out.push(path);
            }
        }
    };
    named(objects_dir, &|n| n.starts_with(".tmp"), &mut out);
    named(
        kapi_dir,
        &|n| n.contains(".kapi-tmp.") || n.contains(".tmp.") || n == "journal.new",
        &mut out,
    );
    out
}

/// Remove the leftovers (call under the commit lock); returns how many.
pub fn sweep(objects_dir: &Path, kapi_dir: &Path) -> usize {
    let _ = std::fs::write(kapi_dir.join(STAMP), b"");
    leftovers(objects_dir, kapi_dir)
        .into_iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count()
}

/// Whether the last sweep is older than [`MIN_AGE`] (or never happened).
pub fn due(kapi_dir: &Path) -> bool {
    let stamp = kapi_dir.join(STAMP);
    !stamp.exists() || old(&stamp, SystemTime::now())
}
