//! Fault points: a test facility for crash consistency. With
//! `KAPI_FAULT=<point>` a kapi process kills itself (SIGKILL) the first
//! time it reaches `<point>`; with `KAPI_FAULT=<point>:stop` it stops itself
//! (SIGSTOP), as a suspended terminal job or a debugger would, so a test can
//! watch what later writers do while it holds what it holds. Several points
//! may be named, separated by commas. Unset, a point costs a lock of an
//! empty list.
//!
//! The points, in the order a writer reaches them:
//! - `journaled`: the writer's lines are in `.git/kapi/journal`;
//! - `objects-written`: the committing writer wrote the segments, trees and
//!   commit, and has not locked the ref;
//! - `intent-written`: it wrote its intent (`.git/kapi/ref-intent.<log>`)
//!   and has not locked the ref;
//! - `ref-locked`: it holds `refs/kapi/<log>.lock` and has not renamed it;
//! - `ref-moved`: the ref moved; the journal still holds the lines;
//! - `compact-written`: the shortened journal is written beside the old
//!   one (`journal.new`) and not yet renamed over it, or, when nothing
//!   follows the committed lines, the journal is about to be truncated;
//! - `compacted`: the journal holds only what was not committed.

use std::sync::Mutex;
use std::sync::OnceLock;

/// The points a test may name.
pub const POINTS: &[&str] = &[
    "journaled",
    "objects-written",
    "intent-written",
    "ref-locked",
    "ref-moved",
    "compact-written",
    "compacted",
];

/// `KAPI_FAULT`: points separated by commas, each `<point>` (kill) or
/// `<point>:stop`; each fires the first time it is reached, so
/// `ref-moved:stop,compact-written` stops a writer after it moved the ref
/// and, once continued, kills it while it compacts.
fn armed() -> &'static Mutex<Vec<(String, bool)>> {
    static SPEC: OnceLock<Mutex<Vec<(String, bool)>>> = OnceLock::new();
    SPEC.get_or_init(|| {
        let spec = std::env::var("KAPI_FAULT").unwrap_or_default();
        let points = spec
            .split(',')
            .filter_map(|p| {
                let (point, stop) = match p.trim().strip_suffix(":stop") {
                    Some(point) => (point, true),
                    None => (p.trim(), false),
                };
                POINTS.contains(&point).then(|| (point.to_owned(), stop))
            })
            .collect();
        Mutex::new(points)
    })
}

/// Die (or stop) here if a test armed this point.
pub(crate) fn point(name: &str) {
    let stop = {
        let mut armed = armed().lock().unwrap_or_else(|e| e.into_inner());
        if armed.is_empty() {
            return;
        }
        let Some(at) = armed.iter().position(|(p, _)| p == name) else {
            return;
        };
        armed.remove(at).1
    };
    let signal = if stop { "-STOP" } else { "-KILL" };
    let sent = std::process::Command::new("kill")
        .arg(signal)
        .arg(std::process::id().to_string())
        .status()
        .is_ok_and(|s| s.success());
    if !stop {
        // The signal is delivered before `kill` returns; if it could not be
        // sent, die all the same: a fault point never lets a writer go on.
        if sent {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        std::process::abort();
    }
}
