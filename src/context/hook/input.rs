//! Reading what an agent host hands a hook: its JSON on stdin (under a
//! cap), the file an edit wrote, the last entry of its transcript.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::HookError;
use crate::fsutil::{FileError, Links};

/// How much of a transcript's end is read to find its last entry.
const TRANSCRIPT_TAIL: u64 = 256 * 1024;

/// The largest hook input read (an agent host's JSON on stdin).
pub const MAX_INPUT: u64 = 4 * 1024 * 1024;

/// The host's JSON, at most [`MAX_INPUT`] bytes of it read from `input`.
pub fn read_input(input: impl Read) -> Result<AgentInput, HookError> {
    let mut buf = Vec::new();
    input
        .take(MAX_INPUT)
        .read_to_end(&mut buf)
        .map_err(|e| HookError::Input(format!("cannot read stdin: {e}")))?;
    AgentInput::parse(&buf)
}

/// The JSON an agent host sends a hook on stdin (the fields kapi reads;
/// the rest are ignored, since hosts add fields over time).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AgentInput {
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// Stop: the agent is already continuing because a Stop hook blocked.
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<serde_json::Value>,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// Codex names each turn.
    #[serde(default)]
    pub turn_id: Option<String>,
}

impl AgentInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, HookError> {
        let input: AgentInput =
            serde_json::from_slice(bytes).map_err(|e| HookError::Input(e.to_string()))?;
        if input.session_id.trim().is_empty() || input.session_id.len() > 256 {
            return Err(HookError::Input(
                "`session_id` is empty or longer than 256 bytes".into(),
            ));
        }
        Ok(input)
    }

    /// The directory the host runs in (its `cwd`, else `fallback`).
    pub fn dir(&self, fallback: &Path) -> PathBuf {
        self.cwd.clone().unwrap_or_else(|| fallback.to_path_buf())
    }
}

/// The last entry of a transcript (JSON Lines): its `uuid`, else a digest
/// of the line. `Ok(None)` when there is no transcript, or nothing in it.
/// Only a regular file is read, without blocking, and only its last
/// [`TRANSCRIPT_TAIL`] bytes (a FIFO or `/dev/zero` is refused, not read).
pub fn transcript_last_entry(path: &Path) -> Result<Option<String>, FileError> {
    let mut file = match crate::fsutil::open_regular(path, Links::Follow) {
        Ok(file) => file,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TRANSCRIPT_TAIL)))?;
    let mut tail = Vec::new();
    // Bounded even when the host writes on while this reads.
    file.take(TRANSCRIPT_TAIL).read_to_end(&mut tail)?;
    let Some(line) = tail
        .split(|b| *b == b'\n')
        .rev()
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
    else {
        return Ok(None);
    };
    let uuid = serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("uuid").and_then(|u| u.as_str()).map(str::to_owned));
    Ok(Some(uuid.unwrap_or_else(|| {
        format!("sha256:{}", crate::digest::sha256_hex(line))
    })))
}

/// The file an Edit, Write or MultiEdit call wrote, from its input.
pub fn edited_file(input: &AgentInput) -> Option<PathBuf> {
    let tool = input.tool_name.as_deref()?;
    if !matches!(tool, "Edit" | "Write" | "MultiEdit") {
        return None;
    }
    let args = input.tool_input.as_ref()?;
    args.get("file_path")
        .or_else(|| args.get("filePath"))
        .and_then(|p| p.as_str())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_input_is_read_under_its_cap() {
        let json = br#"{"session_id":"s1","cwd":"/tmp"}"#;
        assert_eq!(read_input(&json[..]).unwrap().session_id, "s1");
        // Past the cap the JSON is cut, and so not valid.
        let mut big = br#"{"session_id":"s1","x":""#.to_vec();
        big.resize(MAX_INPUT as usize + 16, b'a');
        big.extend_from_slice(br#""}"#);
        assert!(matches!(read_input(&big[..]), Err(HookError::Input(_))));
    }

    #[test]
    fn the_last_transcript_entry_is_its_uuid_or_a_digest_of_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"uuid\":\"a\"}\n{\"uuid\":\"b\",\"type\":\"system\"}\n\n",
        )
        .unwrap();
        let last = |p: &Path| transcript_last_entry(p).unwrap();
        assert_eq!(last(&path).as_deref(), Some("b"));
        std::fs::write(&path, "{\"uuid\":\"a\"}\nnot json\n").unwrap();
        assert!(last(&path).unwrap().starts_with("sha256:"));
        assert_eq!(last(&dir.path().join("none")), None);
        // A device is refused, never read.
        assert!(matches!(
            transcript_last_entry(Path::new("/dev/zero")),
            Err(FileError::NotRegular("a device"))
        ));
    }
}
