//! The arrival position: the order in which operations reached this
//! clone's logs, whether recorded here or merged in from elsewhere, so a
//! surface watching for change (an editor, a dashboard, the MCP server)
//! polls one number. Operation ids sort by the instant a log first
//! accepted them, so an operation merged in from another machine can sort
//! before ones already held; its arrival position is still the next one.
//!
//! Kept in `.git/kapi/arrivals`: a line `kapi arrivals v1 <generation>`,
//! then one id per line (25 bytes each), in the order they arrived. The
//! position is the number of ids listed. Positions are local: another
//! clone numbers the same operations in its own order. The file is
//! brought up to date when it is read (the ids the log holds that it does
//! not list are appended, in id order), not on every write, so recording
//! costs nothing more. `arrivals.tips` (derived) says which tips and how
//! many ids it was last brought up to, so an unchanged log is answered
//! without comparing sets.
//!
//! The file is not derived: arrival order is this clone's own history, and
//! no read of the log gives it back. A file that does not check out (a
//! line that is not an id, an id twice, an id the log no longer holds) is
//! never obeyed: it is started again under a new generation, every id the
//! log holds listed in id order, and a watcher that names the old
//! generation is told to start over ([`Since::restarted`]). A torn last
//! line (a writer killed mid-append) is cut off; its ids are appended again.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::checkpoint::{Tips, tips_hex};
use super::lock::Lock;
use super::{Store, StoreError};
use crate::fsutil::{self, Links};
use crate::ops::id::{LEN, OpId};

const NAME: &str = "arrivals";
pub(super) const TIPS: &str = "arrivals.tips";
const LOCK: &str = "arrivals.lock";
const MAGIC: &str = "kapi arrivals v1 ";
/// One listed id and its newline.
const LINE: usize = LEN + 1;
/// The longest generation a header may carry.
const MAX_GENERATION: usize = 64;

/// What arrived after a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    /// The arrival record's generation: positions of one generation only
    /// compare with each other.
    pub generation: String,
    /// The position now (how many operations have arrived): the next
    /// poll's `since`.
    pub position: u64,
    /// The position was not one of this generation's (another generation
    /// was named, or it is past the head), so everything is returned, from
    /// position 0.
    pub restarted: bool,
    /// The operations that arrived after the position, in arrival order.
    pub arrived: Vec<OpId>,
}

/// `arrivals.tips`: what the file was last brought up to.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Caught {
    generation: String,
    tips: [Option<String>; 2],
    count: u64,
}

/// The file's contents, read and checked.
struct Listed {
    generation: String,
    ids: Vec<OpId>,
    /// Bytes of complete lines (a torn tail beyond them is cut off).
    len: u64,
}

impl Store {
    /// Whether this clone keeps an arrival record (a watcher has polled).
    pub fn keeps_arrivals(&self) -> bool {
        self.kapi_dir().join(NAME).exists()
    }

    /// Bring the arrival record up to `held` (every operation the logs
    /// hold, in id order, read at or after `tips`), then say what arrived
    /// after `since` (of `generation`, if the caller names one).
    /// `fresh_generation` names a record started anew.
    pub fn arrivals_since(
        &self,
        tips: Tips,
        held: &[OpId],
        since: u64,
        generation: Option<&str>,
        fresh_generation: impl FnOnce() -> String,
    ) -> Result<Since, StoreError> {
        let dir = self.kapi_dir();
        let caught = read_caught(&dir);
        let listed = match caught {
            // The logs are where the record was last brought: its ids are
            // read as they are (each is checked against `held` below).
            Some(c) if c.tips == tips_hex(tips) && c.count == held.len() as u64 => {
                read_listed(&dir)
                    .filter(|l| l.generation == c.generation && l.ids.len() == held.len())
            }
            _ => None,
        };
        let listed = match listed {
            Some(listed) if listed.ids.iter().all(|id| held.binary_search(id).is_ok()) => listed,
            _ => self.catch_up(&dir, tips, held, fresh_generation)?,
        };
        let head = listed.ids.len() as u64;
        let restarted = generation.is_some_and(|g| g != listed.generation) || since > head;
        let from = if restarted { 0 } else { since as usize };
        Ok(Since {
            position: head,
            restarted,
            arrived: listed.ids[from..].to_vec(),
            generation: listed.generation,
        })
    }

    /// Under the record's lock: append what `held` has that the file does
    /// not list, or start the file again when it does not check out.
    fn catch_up(
        &self,
        dir: &Path,
        tips: Tips,
        held: &[OpId],
        fresh_generation: impl FnOnce() -> String,
    ) -> Result<Listed, StoreError> {
        let _lock = Lock::named(dir, LOCK, self.lock_timeout)?;
        let io = |source| StoreError::Io {
            path: dir.join(NAME),
            source,
        };
        let checked = read_listed(dir).filter(|listed| {
            let mut seen = HashSet::with_capacity(listed.ids.len());
            listed
                .ids
                .iter()
                .all(|id| seen.insert(*id) && held.binary_search(id).is_ok())
        });
        let listed = match checked {
            Some(mut listed) => {
                let known: HashSet<OpId> = listed.ids.iter().copied().collect();
                let new: Vec<OpId> = held
                    .iter()
                    .filter(|id| !known.contains(id))
                    .copied()
                    .collect();
                if !new.is_empty() || file_len(dir) != Some(listed.len) {
                    let mut file =
                        fsutil::append_regular(&dir.join(NAME), Links::Refuse).map_err(|e| {
                            io(match e {
                                fsutil::FileError::Io(e) => e,
                                other => std::io::Error::other(other.to_string()),
                            })
                        })?;
                    // Cut off a torn tail before appending after it.
                    file.set_len(listed.len).map_err(io)?;
                    file.seek(SeekFrom::End(0)).map_err(io)?;
                    let mut bytes = Vec::with_capacity(new.len() * LINE);
                    for id in &new {
                        bytes.extend_from_slice(id.as_str().as_bytes());
                        bytes.push(b'\n');
                    }
                    file.write_all(&bytes).map_err(io)?;
                    listed.len += bytes.len() as u64;
                    listed.ids.extend(new);
                }
                listed
            }
            None => {
                let generation: String = fresh_generation()
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .take(MAX_GENERATION)
                    .collect();
                let listed = Listed {
                    len: (MAGIC.len() + generation.len() + 1 + held.len() * LINE) as u64,
                    ids: held.to_vec(),
                    generation,
                };
                crate::atomic::replace_derived(&dir.join(NAME), |out| {
                    writeln!(out, "{MAGIC}{}", listed.generation)?;
                    for id in held {
                        out.write_all(id.as_str().as_bytes())?;
                        out.write_all(b"\n")?;
                    }
                    Ok(())
                })
                .map_err(io)?;
                listed
            }
        };
        let caught = Caught {
            generation: listed.generation.clone(),
            tips: tips_hex(tips),
            count: listed.ids.len() as u64,
        };
        // Best effort: without it the next read compares sets again.
        let _ = crate::atomic::replace_derived(&dir.join(TIPS), |out| {
            out.write_all(&serde_json::to_vec(&caught).unwrap_or_default())
        });
        Ok(listed)
    }
}

fn file_len(dir: &Path) -> Option<u64> {
    std::fs::symlink_metadata(dir.join(NAME))
        .ok()
        .map(|m| m.len())
}

fn read_caught(dir: &Path) -> Option<Caught> {
    let bytes = fsutil::read_optional(&dir.join(TIPS), Links::Refuse).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// The record as the file holds it, if its header and every complete line
/// read (duplicates and ids the log lacks are for the caller to judge).
fn read_listed(dir: &Path) -> Option<Listed> {
    let mut file = fsutil::open_regular(&dir.join(NAME), Links::Refuse).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let header_end = bytes.iter().position(|&b| b == b'\n')?;
    let generation = std::str::from_utf8(&bytes[..header_end])
        .ok()?
        .strip_prefix(MAGIC)?;
    if generation.is_empty()
        || generation.len() > MAX_GENERATION
        || !generation.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return None;
    }
    let body = &bytes[header_end + 1..];
    let whole = body.len() / LINE * LINE;
    let mut ids = Vec::with_capacity(whole / LINE);
    for line in body[..whole].chunks_exact(LINE) {
        if line[LEN] != b'\n' {
            return None;
        }
        ids.push(OpId::parse(std::str::from_utf8(&line[..LEN]).ok()?).ok()?);
    }
    Some(Listed {
        generation: generation.to_owned(),
        ids,
        len: (header_end + 1 + whole) as u64,
    })
}
