//! Fault points: a test facility for crash consistency. With
//! `KAPI_FAULT=<point>` a kapi process kills itself (SIGKILL) the first
//! time it reaches `<point>`; with `KAPI_FAULT=<point>:stop` it stops itself
//! (SIGSTOP), as a suspended terminal job or a debugger would, so a test can
//! watch what later writers do while it holds what it holds. Unset, a point
//! costs one load of a cached flag.
//!
//! The points, in the order a writer reaches them:
//! - `journaled`: the writer's lines are in `.git/kapi/journal`;
//! - `objects-written`: the committing writer wrote the segments, trees and
//!   commit, and has not locked the ref;
//! - `ref-locked`: it holds `refs/kapi/<log>.lock` and has not renamed it;
//! - `ref-moved`: the ref moved; the journal still holds the lines;
//! - `compact-written`: the shortened journal is written beside the old
//!   one (`journal.new`) and not yet renamed over it;
//! - `compacted`: the journal holds only what was not committed.

use std::sync::OnceLock;

/// The points a test may name.
pub const POINTS: &[&str] = &[
    "journaled",
    "objects-written",
    "ref-locked",
    "ref-moved",
    "compact-written",
    "compacted",
];

fn armed() -> Option<&'static (String, bool)> {
    static SPEC: OnceLock<Option<(String, bool)>> = OnceLock::new();
    SPEC.get_or_init(|| {
        let spec = std::env::var("KAPI_FAULT").ok()?;
        let (point, stop) = match spec.strip_suffix(":stop") {
            Some(point) => (point.to_owned(), true),
            None => (spec, false),
        };
        POINTS.contains(&point.as_str()).then_some((point, stop))
    })
    .as_ref()
}

/// Die (or stop) here if a test armed this point.
pub fn point(name: &str) {
    let Some((armed, stop)) = armed() else { return };
    if armed != name {
        return;
    }
    let signal = if *stop { "-STOP" } else { "-KILL" };
    let _ = std::process::Command::new("kill")
        .arg(signal)
        .arg(std::process::id().to_string())
        .status();
    if !*stop {
        // The signal is delivered before `kill` returns; never go on.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
}
