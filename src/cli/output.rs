//! Writing to stdout (a broken pipe, `kapi context log | head`, is
//! success) and stderr, escaping what people read (`crate::terminal`).

use std::io::{self, Write};

use super::exit::{CliError, Exit};
use super::global::{Settings, paint_line};

/// Locked, buffered stdout whose broken-pipe errors end the program quietly.
pub struct Out {
    inner: io::BufWriter<io::StdoutLock<'static>>,
}

impl Out {
    pub fn new() -> Self {
        Self {
            inner: io::BufWriter::new(io::stdout().lock()),
        }
    }

    /// One line for people: whatever in it would steer a terminal (a
    /// note's `\r\x1b[2K`, a bidi override, a line end inside a value) is
    /// shown escaped (`crate::terminal`). Text of several lines is several
    /// calls.
    pub fn line(&mut self, text: impl AsRef<str>) -> Result<(), CliError> {
        self.exact(crate::terminal::escape(text.as_ref()))
    }

    /// [`Out::line`] for what is not the answer (what was done besides,
    /// `updated the rules in force in AGENTS.md`): nothing under `-q`.
    pub fn note(&mut self, text: impl AsRef<str>) -> Result<(), CliError> {
        if Settings::get().quiet {
            return Ok(());
        }
        self.line(text)
    }

    /// One line written as it is: a JSON document, which escapes by itself.
    pub fn exact(&mut self, text: impl AsRef<str>) -> Result<(), CliError> {
        let r = self
            .inner
            .write_all(text.as_ref().as_bytes())
            .and_then(|()| self.inner.write_all(b"\n"));
        map_pipe(r)
    }

    /// One value as one line of JSON (a `--json` document). A value that
    /// does not serialize is a bug in kapi (exit 70).
    pub fn json(&mut self, value: &impl serde::Serialize) -> Result<(), CliError> {
        let text = serde_json::to_string(value).map_err(|e| {
            CliError::new(
                Exit::Internal,
                format!("cannot write the JSON document: {e}"),
            )
        })?;
        self.exact(text)
    }

    pub fn raw(&mut self, bytes: &[u8]) -> Result<(), CliError> {
        map_pipe(self.inner.write_all(bytes))
    }

    pub fn flush(&mut self) -> Result<(), CliError> {
        map_pipe(self.inner.flush())
    }
}

impl Default for Out {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Out {
    /// The last buffered bytes are written here: a failure (a full disk, a
    /// device that refuses writes) is reported and ends the program with
    /// the store's code, never passed over as success.
    fn drop(&mut self) {
        if let Err(e) = map_pipe(self.inner.flush()) {
            let code = e.exit;
            let _ = e.report();
            std::process::exit(code as i32);
        }
    }
}

/// One line for people on stderr (a warning, a hook's message), escaped
/// as [`Out::line`] escapes; a leading `error:`, `warning:` or `hint:` in
/// colour where stderr takes it. A failed write is ignored (where
/// `eprintln!` would panic): stderr is where a failure would be reported.
pub fn stderr_line(text: impl AsRef<str>) {
    write_stderr(&crate::terminal::escape(text.as_ref()));
}

/// Text kapi broke into lines for people on stderr (an error quoting git
/// or a TOML parser): its line ends stay, everything else that would
/// steer a terminal is escaped, as [`CliError::report`] does.
pub fn stderr_text(text: impl AsRef<str>) {
    write_stderr(&crate::terminal::escape_lines(text.as_ref()));
}

/// A line on stderr that is not the answer nor a warning (what a step is
/// doing, what it did besides): nothing under `-q`.
pub fn note(text: impl AsRef<str>) {
    if !Settings::get().quiet {
        stderr_line(text);
    }
}

/// A detail on stderr for `-v` (`level` 1) or `-vv` (2).
pub fn detail(level: u8, text: impl AsRef<str>) {
    if Settings::get().verbose >= level {
        stderr_line(text);
    }
}

/// Escaped text and a line end on stderr, each line's leading label
/// painted where stderr takes colour.
fn write_stderr(escaped: &str) {
    let styled = Settings::get().stderr_styled;
    let mut err = io::stderr().lock();
    let mut text = String::with_capacity(escaped.len() + 1);
    for line in escaped.split_inclusive('\n') {
        text.push_str(&paint_line(line, styled));
    }
    text.push('\n');
    let _ = err.write_all(text.as_bytes());
}

fn map_pipe(r: io::Result<()>) -> Result<(), CliError> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        // Output that cannot be written is the store's code, whatever its
        // kind (docs/exit-codes.md).
        Err(e) => Err(CliError::store(format!("cannot write output: {e}"))),
    }
}
