//! The workspace registry: the repositories kapi knows on this machine,
//! in the user's data directory (`$XDG_DATA_HOME/kapi/repositories.jsonl`,
//! else `$HOME/.local/share/kapi/repositories.jsonl`), one JSON line per
//! registration; the latest line for a path wins.
//!
//! Every check, hook and write reads it, so a read is linear in the bytes
//! read and bounded: only the newest [`READ_CAP`] bytes are read (older
//! lines are passed over, and a path registered again is registered at
//! the end), a line longer than [`LINE_CAP`] is skipped, and the file is
//! opened as vault notes are ([`crate::fsutil`], a symlink at its name
//! refused): a FIFO, a device or a symlink is never read or written, and
//! the registry reads as empty.
//!
//! Appends are one write of one line to a file opened for appending, so
//! registrations lose nothing to each other. A rewrite (`kapi workspace
//! forget`) replaces the file whole through [`crate::atomic`] while it
//! holds an advisory lock (`flock`) on the file it read; an appender takes
//! the same lock for its one write, and writes only to the file the path
//! still names, so a line appended while a rewrite runs lands in the new
//! file rather than in the one the rename replaced. An appender waits for
//! the lock a short, bounded time and then gives up (registering is best
//! effort); a rewrite waits the store's lock timeout.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::super::Env;
use crate::fsutil::{FileError, Links, append_regular, open_regular};

/// The registry file's name inside `<data dir>/kapi/`.
pub(crate) const REGISTRY: &str = "repositories.jsonl";

/// The newest bytes of the registry that are read: 1 MiB, some 7,000
/// registrations of typical paths. Older lines are not read.
pub(crate) const READ_CAP: u64 = 1 << 20;

/// The longest line read (a path of `PATH_MAX` bytes, its project key and
/// the JSON around them fit); a longer line is skipped.
pub(crate) const LINE_CAP: usize = 8 * 1024;

/// How long an appender waits for a rewrite to finish before it gives up
/// registering (best effort: the command it serves goes on).
const APPEND_WAIT: Duration = Duration::from_secs(1);

/// One registered repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    /// The top of its work tree, canonical.
    pub path: PathBuf,
    /// Its project key when it registered.
    pub project: String,
    /// A person chose to share the rules its log widens to the workspace
    /// with every other repository on this machine (`kapi workspace add`,
    /// or their own `kapi context review --widen-to workspace` in it).
    /// Registering by recording, syncing or importing never sets it, and a
    /// line written before the field existed does not share.
    #[serde(default)]
    pub shares: bool,
}

/// Why the registry was read as empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// A FIFO, a device, a folder or a symlink stands at its name (what,
    /// in words).
    NotRegular(&'static str),
    /// It could not be opened or read.
    Io(String),
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::NotRegular(what) => write!(
                f,
                "is {what}, not a regular file, so it is read as empty and nothing is registered; remove it and kapi registers repositories again"
            ),
            Unread::Io(e) => write!(f, "cannot be read ({e}), so it is read as empty"),
        }
    }
}

/// What one read of the registry found.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// The file, when the environment names a data directory.
    pub file: Option<PathBuf>,
    /// Every registered repository once, in the order first registered,
    /// each as its latest line says.
    pub entries: Vec<Registered>,
    /// Why the file was read as empty, when it could not be read.
    pub unread: Option<Unread>,
    /// Lines skipped: not an entry, or longer than [`LINE_CAP`].
    pub skipped_lines: usize,
    /// Older bytes not read, past the newest [`READ_CAP`].
    pub skipped_bytes: u64,
}

impl Registry {
    /// The entry for `path`, if registered.
    pub(crate) fn get(&self, path: &Path) -> Option<&Registered> {
        // Paths are compared as bytes: Path's own equality walks
        // components, and this runs over every entry.
        self.entries
            .iter()
            .find(|e| e.path.as_os_str() == path.as_os_str())
    }
}

/// The registry file, when the environment names a data directory.
pub(crate) fn registry_file(env: &dyn Env) -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| {
        v.filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute(env.var_os("XDG_DATA_HOME"))
        .or_else(|| absolute(env.var_os("HOME")).map(|h| h.join(".local/share")))
        .map(|d| d.join("kapi").join(REGISTRY))
}

/// Read the registry the environment names.
pub(crate) fn read(env: &dyn Env) -> Registry {
    match registry_file(env) {
        Some(file) => read_file(&file),
        None => Registry::default(),
    }
}

/// Read the registry at `file`: a missing file is an empty registry.
pub(crate) fn read_file(file: &Path) -> Registry {
    let mut registry = Registry {
        file: Some(file.to_path_buf()),
        ..Registry::default()
    };
    let mut opened = match open_regular(file, Links::Refuse) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return registry,
        Err(FileError::NotRegular(what)) => {
            registry.unread = Some(Unread::NotRegular(what));
            return registry;
        }
        Err(e) => {
            registry.unread = Some(Unread::Io(e.to_string()));
            return registry;
        }
    };
    match read_tail(&mut opened) {
        Ok((bytes, skipped)) => {
            let (entries, skipped_lines) = parse(&bytes);
            registry.entries = entries;
            registry.skipped_lines = skipped_lines;
            registry.skipped_bytes = skipped;
        }
        Err(e) => registry.unread = Some(Unread::Io(e.to_string())),
    }
    registry
}

/// The newest whole lines of `file` within [`READ_CAP`] bytes, and how
/// many older bytes were not read.
fn read_tail(file: &mut File) -> std::io::Result<(Vec<u8>, u64)> {
    let len = file.metadata()?.len();
    if len <= READ_CAP {
        let mut bytes = Vec::with_capacity(len as usize);
        Read::by_ref(file).take(READ_CAP).read_to_end(&mut bytes)?;
        return Ok((bytes, 0));
    }
    // One byte more than the cap, so a cut that falls at a line's start
    // drops only the newline before it.
    let from = len - READ_CAP - 1;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity(READ_CAP as usize + 1);
    Read::by_ref(file)
        .take(READ_CAP + 1)
        .read_to_end(&mut bytes)?;
    let cut = memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1);
    bytes.drain(..cut);
    Ok((bytes, from + cut as u64))
}

/// One line as read: its strings borrowed from the bytes read (unless a
/// string holds an escape), so a line that a later one replaces costs no
/// allocation.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(borrow)]
    project: Cow<'a, str>,
    #[serde(default)]
    shares: bool,
}

/// The entries `bytes` hold, once per path (the latest line wins, in the
/// order first seen), and how many lines were skipped. Linear: one hash
/// lookup per line, keyed by the path's text.
pub fn parse(bytes: &[u8]) -> (Vec<Registered>, usize) {
    let mut lines: Vec<Line<'_>> = Vec::new();
    let mut at: HashMap<Cow<'_, str>, usize> = HashMap::new();
    let mut skipped = 0;
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > LINE_CAP {
            skipped += 1;
            continue;
        }
        let Ok(entry) = serde_json::from_slice::<Line<'_>>(line) else {
            skipped += 1;
            continue;
        };
        match at.get(&entry.path) {
            Some(&i) => lines[i] = entry,
            None => {
                at.insert(entry.path.clone(), lines.len());
                lines.push(entry);
            }
        }
    }
    let entries = lines
        .into_iter()
        .map(|l| Registered {
            path: PathBuf::from(l.path.into_owned()),
            project: l.project.into_owned(),
            shares: l.shares,
        })
        .collect();
    (entries, skipped)
}

/// Why the registry could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "no data directory for the workspace registry: set HOME or XDG_DATA_HOME to an absolute path"
    )]
    NoDataDir,
    #[error("the workspace registry {} {why}", file.display())]
    Unreadable { file: PathBuf, why: Unread },
    #[error("cannot write the workspace registry {}: {source}", file.display())]
    Write {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the workspace registry {} is held by another kapi process (waited {} ms); try again",
        file.display(),
        waited.as_millis()
    )]
    Busy { file: PathBuf, waited: Duration },
}

/// Append `entry` as one line, under the registry's lock (waiting at most
/// [`APPEND_WAIT`]).
pub(crate) fn append(file: &Path, entry: &Registered) -> Result<(), RegistryError> {
    append_waiting(file, entry, APPEND_WAIT)
}

/// [`append`], waiting at most `wait` for a rewrite.
pub(crate) fn append_waiting(
    file: &Path,
    entry: &Registered,
    wait: Duration,
) -> Result<(), RegistryError> {
    let write_error = |source| RegistryError::Write {
        file: file.to_path_buf(),
        source,
    };
    let mut line = serde_json::to_string(entry).map_err(|e| write_error(e.into()))?;
    line.push('\n');
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    let deadline = Instant::now() + wait;
    loop {
        let mut opened = append_regular(file, Links::Refuse).map_err(|e| match e {
            FileError::NotRegular(what) => RegistryError::Unreadable {
                file: file.to_path_buf(),
                why: Unread::NotRegular(what),
            },
            FileError::Io(source) => write_error(source),
            e @ FileError::TooLarge => write_error(std::io::Error::other(e)),
        })?;
        // A rewrite renamed a new file over the one opened: write there.
        if !lock_current(&opened, file, deadline, wait)? {
            continue;
        }
        // One write of one line to a file opened for appending.
        return opened.write_all(line.as_bytes()).map_err(write_error);
    }
}

/// Rewrite the registry without the entries `forget` picks, under its
/// lock (waiting at most `wait`), compacted to one line per repository.
/// Returns the entries forgotten (none: the file is left as it was).
pub(crate) fn rewrite(
    file: &Path,
    wait: Duration,
    mut forget: impl FnMut(&Registered) -> bool,
) -> Result<Vec<Registered>, RegistryError> {
    let write_error = |source| RegistryError::Write {
        file: file.to_path_buf(),
        source,
    };
    let unreadable = |why| RegistryError::Unreadable {
        file: file.to_path_buf(),
        why,
    };
    let deadline = Instant::now() + wait;
    loop {
        let mut opened = match open_regular(file, Links::Refuse) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(FileError::NotRegular(what)) => return Err(unreadable(Unread::NotRegular(what))),
            Err(e) => return Err(unreadable(Unread::Io(e.to_string()))),
        };
        if !lock_current(&opened, file, deadline, wait)? {
            continue;
        }
        let (bytes, _) =
            read_tail(&mut opened).map_err(|e| unreadable(Unread::Io(e.to_string())))?;
        let (entries, _) = parse(&bytes);
        let (gone, kept): (Vec<Registered>, Vec<Registered>) =
            entries.into_iter().partition(|e| forget(e));
        if gone.is_empty() {
            return Ok(gone);
        }
        let mut out = Vec::new();
        for entry in &kept {
            serde_json::to_writer(&mut out, entry).map_err(|e| write_error(e.into()))?;
            out.push(b'\n');
        }
        let permissions = opened.metadata().ok().map(|m| m.permissions());
        crate::atomic::replace(file, &out, permissions).map_err(write_error)?;
        // The lock on the replaced file is released when `opened` drops:
        // appenders waiting on it find the path names a new file.
        return Ok(gone);
    }
}

enum Locked {
    Timeout,
    Io(std::io::Error),
}

/// Take `file`'s exclusive lock, trying until `deadline`. Polled rather
/// than blocking: a process stopped while it holds the lock must not
/// stop this one.
/// Lock `opened`, the registry at `file`, waiting until `deadline`:
/// `false` when a rewrite renamed a new file over it meanwhile (the
/// caller opens the file again), busy once the deadline has passed.
fn lock_current(
    opened: &File,
    file: &Path,
    deadline: Instant,
    wait: Duration,
) -> Result<bool, RegistryError> {
    let busy = || RegistryError::Busy {
        file: file.to_path_buf(),
        waited: wait,
    };
    lock_until(opened, deadline).map_err(|e| match e {
        Locked::Timeout => busy(),
        Locked::Io(source) => RegistryError::Write {
            file: file.to_path_buf(),
            source,
        },
    })?;
    if still_named(opened, file) {
        return Ok(true);
    }
    if Instant::now() >= deadline {
        return Err(busy());
    }
    Ok(false)
}

fn lock_until(file: &File, deadline: Instant) -> Result<(), Locked> {
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Err(Locked::Timeout),
            Err(std::fs::TryLockError::Error(e)) => return Err(Locked::Io(e)),
        }
    }
}

/// Whether `path` still names the file `opened` is.
fn still_named(opened: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (opened.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (opened, path);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(path: &str, project: &str, shares: Option<bool>) -> String {
        match shares {
            Some(s) => {
                format!("{{\"path\":\"{path}\",\"project\":\"{project}\",\"shares\":{s}}}\n")
            }
            None => format!("{{\"path\":\"{path}\",\"project\":\"{project}\"}}\n"),
        }
    }

    #[test]
    fn the_latest_line_for_a_path_wins_and_old_lines_do_not_share() {
        let text = [
            line("/a", "a", None),
            line("/b", "b", Some(true)),
            "not json\n".into(),
            line("/a", "a2", Some(true)),
            format!(
                "{{\"path\":\"/{}\",\"project\":\"x\"}}\n",
                "p".repeat(LINE_CAP)
            ),
        ]
        .concat();
        let (entries, skipped) = parse(text.as_bytes());
        assert_eq!(skipped, 2);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].project, "a2");
        assert!(entries[0].shares);
        let (old, _) = parse(line("/c", "c", None).as_bytes());
        assert!(!old[0].shares, "a line without the field does not share");
    }

    #[test]
    fn past_the_cap_only_the_newest_whole_lines_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(REGISTRY);
        let mut text = String::new();
        let mut n = 0;
        while text.len() as u64 <= READ_CAP + 4096 {
            text.push_str(&line(&format!("/repo/{n:06}"), "p", Some(false)));
            n += 1;
        }
        text.push_str(&line("/newest", "p", Some(true)));
        std::fs::write(&file, &text).unwrap();
        let registry = read_file(&file);
        assert!(registry.skipped_bytes > 4096);
        assert_eq!(registry.skipped_lines, 0, "the cut never splits a line");
        assert!(registry.get(Path::new("/newest")).unwrap().shares);
        assert!(registry.get(Path::new("/repo/000000")).is_none());
        let read: u64 = registry
            .entries
            .iter()
            .map(|e| serde_json::to_string(e).unwrap().len() as u64 + 1)
            .sum();
        assert_eq!(read + registry.skipped_bytes, text.len() as u64);
    }

    #[test]
    fn a_rewrite_keeps_what_it_does_not_forget_and_appends_land_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kapi").join(REGISTRY);
        for (p, s) in [("/a", false), ("/b", true), ("/a", true)] {
            let entry = Registered {
                path: p.into(),
                project: "x".into(),
                shares: s,
            };
            append(&file, &entry).unwrap();
        }
        let gone = rewrite(&file, Duration::from_secs(1), |e| e.path == Path::new("/b")).unwrap();
        assert_eq!(gone.len(), 1);
        let registry = read_file(&file);
        assert_eq!(registry.entries.len(), 1);
        assert!(registry.entries[0].shares, "the latest line was kept");
        assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
        // An appender holding the old file when the rename came writes to
        // the new one.
        let held = File::open(&file).unwrap();
        rewrite(&file, Duration::from_secs(1), |_| true).unwrap();
        assert!(!still_named(&held, &file));
        let c = Registered {
            path: "/c".into(),
            project: "c".into(),
            shares: false,
        };
        append(&file, &c).unwrap();
        assert_eq!(read_file(&file).entries, vec![c]);
    }

    #[test]
    fn a_held_lock_bounds_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(REGISTRY);
        std::fs::write(&file, line("/a", "a", None)).unwrap();
        let holder = File::open(&file).unwrap();
        holder.lock().unwrap();
        let entry = Registered {
            path: "/b".into(),
            project: "b".into(),
            shares: false,
        };
        let started = Instant::now();
        let err = append_waiting(&file, &entry, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, RegistryError::Busy { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let err = rewrite(&file, Duration::from_millis(50), |_| true).unwrap_err();
        assert!(matches!(err, RegistryError::Busy { .. }), "{err}");
    }
}
