//! Writing to stdout: a broken pipe (`kapi context log | head`) is success.

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

    pub fn line(&mut self, text: impl AsRef<str>) -> Result<(), CliError> {
        let r = self
            .inner
            .write_all(text.as_ref().as_bytes())
            .and_then(|()| self.inner.write_all(b"\n"));
        map_pipe(r)
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
    fn drop(&mut self) {
        let _ = self.inner.flush();
    }
}

fn map_pipe(r: io::Result<()>) -> Result<(), CliError> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(CliError::new(
            Exit::Internal,
            format!("cannot write output: {e}"),
        )),
    }
}
