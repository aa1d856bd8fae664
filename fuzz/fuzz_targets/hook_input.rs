//! What an agent host (Claude Code, Codex) sends a kapi hook on stdin, from
//! untrusted bytes: the input parsed, the directory and the edited file
//! read from it, and a transcript's last entry.
#![no_main]
use std::path::Path;

use kapi::context::hook::{AgentInput, edited_file, transcript_last_entry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(input) = AgentInput::parse(data) {
        assert!(!input.session_id.trim().is_empty() && input.session_id.len() <= 256);
        let _ = input.dir(Path::new("/nonexistent"));
        let _ = edited_file(&input);
    }
    // The same bytes as a transcript (JSON Lines) whose last entry is read.
    let dir = std::env::temp_dir().join(format!("kapi-fuzz-hook-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join("transcript.jsonl");
    if std::fs::write(&file, data).is_ok() {
        let _ = transcript_last_entry(&file);
    }
});
