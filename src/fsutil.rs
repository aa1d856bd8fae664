//! Opening files kapi did not write without trusting what they are: regular
//! files only, opened without blocking (a FIFO or a device never stalls a
//! command), without following a symbolic link where the caller refuses
//! them, and read under a cap (`/dev/zero`, or a file that keeps growing,
//! never exhausts memory).
//!
//! The vault reads its notes through here; so do the agent hooks (the
//! transcript, `CLAUDE_ENV_FILE`, the untracked files a session started
//! with), `kapi hooks install` (the git hooks and the agent hosts' settings
//! it edits) and `kapi context note` (the work-tree file an agent's
//! correction names).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// No single file read is larger than this.
pub const READ_CAP: usize = 16 * 1024 * 1024;

/// What to do with a symbolic link at the path itself (links among the
/// folders above it are followed either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Refuse it (`O_NOFOLLOW`): the file must be at the path.
    Refuse,
    /// Follow it: the file it leads to must be regular.
    Follow,
}

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// What is there instead: "a named pipe (FIFO)", "a folder", ...
    #[error("{0}, not a regular file")]
    NotRegular(&'static str),
    #[error("larger than the {READ_CAP}-byte read cap")]
    TooLarge,
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl FileError {
    /// The file is not there (nor, with [`Links::Follow`], what a link at
    /// the path leads to).
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

/// What a file that is not regular is, in words.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

fn options(links: Links) -> OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = match links {
            Links::Refuse => libc::O_NOFOLLOW,
            Links::Follow => 0,
        };
        options.custom_flags(libc::O_NONBLOCK | nofollow | libc::O_CLOEXEC);
    }
    #[cfg(not(unix))]
    let _ = links;
    options
}

/// The error of an open: a link refused by `O_NOFOLLOW` (`ELOOP`), or a
/// FIFO no one reads opened for writing without blocking (`ENXIO`), is
/// named as what it is.
fn open_error(e: io::Error) -> FileError {
    #[cfg(unix)]
    match e.raw_os_error() {
        Some(libc::ELOOP) => return FileError::NotRegular("a symbolic link"),
        Some(libc::ENXIO) => return FileError::NotRegular("a named pipe (FIFO)"),
        _ => {}
    }
    FileError::Io(e)
}

/// The opened descriptor, if it is a regular file.
fn regular(file: File) -> Result<File, FileError> {
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        return Err(FileError::NotRegular(kind_of(file_type)));
    }
    Ok(file)
}

/// Open `path` for reading if it is a regular file. FIFOs and devices
/// never block the open (`O_NONBLOCK`); the opened descriptor is then
/// checked to be a regular file, so a file swapped in between is refused
/// too.
pub fn open_regular(path: &Path, links: Links) -> Result<File, FileError> {
    let file = options(links).read(true).open(path).map_err(open_error)?;
    regular(file)
}

/// Open `path` to append to it, creating it if it is missing, if it is a
/// regular file. Nothing is written to what is not (a FIFO, a device).
pub fn append_regular(path: &Path, links: Links) -> Result<File, FileError> {
    // Said first, by name, where it can be: opening a FIFO for writing
    // without blocking fails unless someone reads it.
    let seen = match links {
        Links::Refuse => std::fs::symlink_metadata(path),
        Links::Follow => std::fs::metadata(path),
    };
    if let Ok(meta) = seen
        && !meta.is_file()
    {
        return Err(FileError::NotRegular(kind_of(meta.file_type())));
    }
    let file = options(links)
        .append(true)
        .create(true)
        .open(path)
        .map_err(open_error)?;
    regular(file)
}

/// Write `bytes` over the start of `file`, cutting it only when it held
/// more. For the small files kapi rewrites on every append (a lock's
/// holder, a ref intent, the newest-id cache): truncating one to nothing
/// and writing it again, or renaming a new one over it, frees its block
/// and allocates another each time, which ext4 pays for with a discard
/// the writer waits for (on a disk mounted with `discard`) and a writeback
/// it starts when the file is closed. Content of a steady length keeps its
/// block. One write of less than a page at offset 0: a process killed
/// during it leaves the old content or the new, never a mix (a cut that
/// follows may be lost: the content's own check must catch a longer old
/// tail).
pub fn overwrite(file: &File, bytes: &[u8]) -> io::Result<()> {
    use std::io::{Seek, Write};
    let mut out = file;
    out.rewind()?;
    out.write_all(bytes)?;
    if file.metadata()?.len() > bytes.len() as u64 {
        file.set_len(bytes.len() as u64)?;
    }
    Ok(())
}

/// [`overwrite`] the regular file at `path`, creating it if it is missing.
/// Nothing is written to what is not a regular file (a FIFO, a device).
pub fn overwrite_regular(path: &Path, links: Links, bytes: &[u8]) -> Result<(), FileError> {
    let file = options(links)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(open_error)?;
    overwrite(&regular(file)?, bytes)?;
    Ok(())
}

/// Read at most `limit` bytes from the start of `file` into `buf`.
pub fn read_prefix(file: &mut File, buf: &mut Vec<u8>, limit: usize) -> io::Result<()> {
    buf.clear();
    file.by_ref().take(limit as u64).read_to_end(buf)?;
    Ok(())
}

/// Continue reading `file` into `buf`, failing if the whole exceeds the cap.
pub fn read_rest(file: &mut File, buf: &mut Vec<u8>) -> Result<(), FileError> {
    let room = READ_CAP.saturating_sub(buf.len()) as u64 + 1;
    file.by_ref().take(room).read_to_end(buf)?;
    if buf.len() > READ_CAP {
        return Err(FileError::TooLarge);
    }
    Ok(())
}

/// Read `file` whole when it holds at most `cap` bytes (`None` past it),
/// into a buffer sized at once from `len`, the length its metadata gave
/// (grown by doubling, a large file's bytes were copied and their pages
/// touched twice over; a file that grew since is still read to the cap).
pub fn read_sized(file: File, len: u64, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let hint = usize::try_from(len.min(cap)).map_or(0, |n| n.saturating_add(1));
    let mut bytes = Vec::new();
    // A length no allocation can hold is only a hint: reading grows it.
    let _ = bytes.try_reserve_exact(hint);
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// Read a whole regular file under the cap.
pub fn read_capped(path: &Path, links: Links) -> Result<Vec<u8>, FileError> {
    let mut file = open_regular(path, links)?;
    let mut buf = Vec::new();
    read_rest(&mut file, &mut buf)?;
    Ok(buf)
}

/// Read a whole regular file under the cap; `None` when nothing is there.
pub fn read_optional(path: &Path, links: Links) -> Result<Option<Vec<u8>>, FileError> {
    match read_capped(path, links) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) -> bool {
        std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success())
    }

    #[test]
    fn reads_whole_up_to_the_cap_whatever_length_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, b"0123456789").unwrap();
        for len in [0, 3, 10, 11, u64::MAX] {
            let read = |cap| read_sized(File::open(&path).unwrap(), len, cap).unwrap();
            assert_eq!(read(10).as_deref(), Some(&b"0123456789"[..]), "len {len}");
            assert_eq!(
                read(u64::MAX).as_deref(),
                Some(&b"0123456789"[..]),
                "len {len}"
            );
            assert_eq!(read(9), None, "len {len}");
        }
    }

    #[test]
    fn refuses_symlinks_dirs_and_fifos_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_capped(&file, Links::Refuse).unwrap(), b"hello");
        assert!(matches!(
            read_capped(dir.path(), Links::Refuse),
            Err(FileError::NotRegular("a folder") | FileError::Io(_))
        ));
        #[cfg(unix)]
        {
            let link = dir.path().join("l.md");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert!(matches!(
                read_capped(&link, Links::Refuse),
                Err(FileError::NotRegular("a symbolic link"))
            ));
            assert_eq!(read_capped(&link, Links::Follow).unwrap(), b"hello");
            let fifo = dir.path().join("f.md");
            if mkfifo(&fifo) {
                for links in [Links::Refuse, Links::Follow] {
                    assert!(matches!(
                        read_capped(&fifo, links),
                        Err(FileError::NotRegular("a named pipe (FIFO)"))
                    ));
                    assert!(matches!(
                        append_regular(&fifo, links),
                        Err(FileError::NotRegular("a named pipe (FIFO)"))
                    ));
                }
            }
            assert!(matches!(
                read_capped(Path::new("/dev/zero"), Links::Follow),
                Err(FileError::NotRegular("a device"))
            ));
            let dangling = dir.path().join("d.md");
            std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
            assert_eq!(read_optional(&dangling, Links::Follow).unwrap(), None);
            assert!(matches!(
                append_regular(&dangling, Links::Refuse),
                Err(FileError::NotRegular("a symbolic link"))
            ));
            assert!(!dir.path().join("gone").exists());
        }
        assert_eq!(
            read_optional(&dir.path().join("none"), Links::Refuse).unwrap(),
            None
        );
    }

    #[test]
    fn appends_to_a_regular_file_and_creates_a_missing_one() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("env.sh");
        append_regular(&path, Links::Refuse)
            .unwrap()
            .write_all(b"a\n")
            .unwrap();
        append_regular(&path, Links::Refuse)
            .unwrap()
            .write_all(b"b\n")
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\nb\n");
    }

    #[cfg(unix)]
    #[test]
    fn overwrites_in_place_cutting_only_what_was_longer() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intent");
        overwrite_regular(&path, Links::Refuse, b"1234567890 long\n").unwrap();
        let inode = std::fs::metadata(&path).unwrap().ino();
        overwrite_regular(&path, Links::Refuse, b"42 short\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"42 short\n");
        overwrite_regular(&path, Links::Refuse, b"a longer one again\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a longer one again\n");
        // The same file throughout: written over, never replaced.
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
        // Never through a link, never into what is not a regular file.
        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            overwrite_regular(&link, Links::Refuse, b"x"),
            Err(FileError::NotRegular("a symbolic link"))
        ));
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        assert!(overwrite_regular(dir.path(), Links::Refuse, b"x").is_err());
    }
}
