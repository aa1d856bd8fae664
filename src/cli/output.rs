//! Writing to stdout (a broken pipe, `kapi context log | head`, is
//! success) and stderr, escaping what people read (`crate::terminal`).

use std::io::{self, Write};

use super::exit::{CliError, Exit};

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
/// as [`Out::line`] escapes. A failed write is ignored (where `eprintln!`
/// would panic): stderr is where a failure would be reported.
pub fn stderr_line(text: impl AsRef<str>) {
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(crate::terminal::escape(text.as_ref()).as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// Text kapi broke into lines for people on stderr (an error quoting git
/// or a TOML parser): its line ends stay, everything else that would
/// steer a terminal is escaped, as [`CliError::report`] does.
pub fn stderr_text(text: impl AsRef<str>) {
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(crate::terminal::escape_lines(text.as_ref()).as_bytes())
        .and_then(|()| err.write_all(b"\n"));
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
