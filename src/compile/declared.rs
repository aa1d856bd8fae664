//! The `[[compile]]` artifacts of `kapi.toml` as use cases: regenerate
//! them all (`compile-context --all`) or verify them all (`verify-context
//! --all`, what a pre-commit hook or a CI step runs). Each yields one
//! outcome per artifact, in declared order, so a caller can report each as
//! it is done and stop at the first error.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::artifacts::{self, DeclaredError};
use super::verify::{Expected, Input, VerifyError, VerifyOptions};
use super::{
    CompileError, MAX_MAX_BYTES, Options, Verification, VerifyStatus, compile_context,
    serialize_compiled, verify_compiled,
};
use crate::config::{CompileEntry, Config};
use crate::fsutil::{FileError, Links, open_regular};
use crate::vault::{Layout, date};

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("kapi.toml declares no [[compile]] artifacts")]
    NoneDeclared,
    #[error("[[compile]] {}: {source}", output.display())]
    Entry {
        output: PathBuf,
        #[source]
        source: DeclaredError,
    },
    #[error("cannot lock the vault {}: {source}", root.display())]
    Lock {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Compiling over the vault at `root` failed.
    #[error("{source}")]
    Compile {
        root: PathBuf,
        #[source]
        source: CompileError,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: FileError,
    },
}

/// What regenerating one declared artifact did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ArtifactCompiled {
    /// Written, `bytes` long.
    Compiled { output: PathBuf, bytes: usize },
    /// Refused (`error`: `budget_too_small`, `scope_too_large`); nothing
    /// was written.
    Refused { output: PathBuf, error: String },
}

/// The verdict on one declared artifact. Serializes as one line of
/// `verify-context --all`: the verification and the artifact's path.
#[derive(Debug, Clone)]
pub struct ArtifactVerified {
    /// The path as `kapi.toml` declares it.
    pub output: PathBuf,
    pub verification: Verification,
}

impl ArtifactVerified {
    pub fn to_json(&self) -> serde_json::Value {
        let mut line = self.verification.to_json();
        line["path"] = serde_json::json!(self.output.to_string_lossy());
        line
    }
}

impl Serialize for ArtifactVerified {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

fn entries(config: &Config) -> Result<&[CompileEntry], ArtifactError> {
    if config.compile.is_empty() {
        return Err(ArtifactError::NoneDeclared);
    }
    Ok(&config.compile)
}

fn declared(
    project: &Path,
    config: &Config,
    entry: &CompileEntry,
) -> Result<artifacts::Declared, ArtifactError> {
    artifacts::declared(project, &config.vault_root(), entry).map_err(|source| {
        ArtifactError::Entry {
            output: entry.output.clone(),
            source,
        }
    })
}

/// Regenerate every `[[compile]]` artifact of `config` (the project's
/// `kapi.toml`) at `today` (or the day an entry pins), each under the
/// vault's exclusive lock.
pub fn compile_declared<'a>(
    project: &'a Path,
    config: &'a Config,
    today: time::Date,
) -> Result<impl Iterator<Item = Result<ArtifactCompiled, ArtifactError>> + 'a, ArtifactError> {
    Ok(entries(config)?
        .iter()
        .map(move |entry| compile_entry(project, config, entry, today)))
}

/// Regenerate one `[[compile]]` entry of `config` at `today` (or the day it pins).
pub fn compile_entry(
    project: &Path,
    config: &Config,
    entry: &CompileEntry,
    today: time::Date,
) -> Result<ArtifactCompiled, ArtifactError> {
    let declared = declared(project, config, entry)?;
    let options = Options {
        recipe: declared.recipe,
        today: declared.today.unwrap_or(today),
        grant: declared.grant,
        scope: Default::default(),
        layout: Layout::from_config(&config.vault),
    };
    let _lock =
        artifacts::lock_exclusive(&declared.root).map_err(|source| ArtifactError::Lock {
            root: declared.root.clone(),
            source,
        })?;
    let compiled =
        compile_context(&declared.root, &options).map_err(|source| ArtifactError::Compile {
            root: declared.root.clone(),
            source,
        })?;
    let output = entry.output.clone();
    if compiled.refused() {
        let error = compiled.value["error"]
            .as_str()
            .unwrap_or("refused")
            .to_string();
        return Ok(ArtifactCompiled::Refused { output, error });
    }
    let bytes = serialize_compiled(&compiled);
    artifacts::write_atomic(&declared.output, &bytes).map_err(|source| ArtifactError::Write {
        path: declared.output.clone(),
        source,
    })?;
    Ok(ArtifactCompiled::Compiled {
        output,
        bytes: bytes.len(),
    })
}

/// Verify every `[[compile]]` artifact of `config` against its declared
/// recipe and grant at `today`; a missing artifact is stale.
pub fn verify_declared<'a>(
    project: &'a Path,
    config: &'a Config,
    today: time::Date,
) -> Result<impl Iterator<Item = Result<ArtifactVerified, ArtifactError>> + 'a, ArtifactError> {
    Ok(entries(config)?
        .iter()
        .map(move |entry| verify_entry(project, config, entry, today)))
}

/// Verify one `[[compile]]` entry of `config` at `today` (or the day it pins).
pub fn verify_entry(
    project: &Path,
    config: &Config,
    entry: &CompileEntry,
    today: time::Date,
) -> Result<ArtifactVerified, ArtifactError> {
    let declared = declared(project, config, entry)?;
    let today = declared.today.unwrap_or(today);
    let options = VerifyOptions {
        today,
        grant: declared.grant,
        expected: Expected::all(&declared.recipe),
        scope: Default::default(),
        layout: Layout::from_config(&config.vault),
    };
    let verification = match std::fs::symlink_metadata(&declared.output) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Verification {
            status: VerifyStatus::Stale,
            reasons: vec!["artifact_missing"],
            as_of: date::format(today),
        },
        _ => verify_file(&declared.root, &declared.output, &options)?,
    };
    Ok(ArtifactVerified {
        output: entry.output.clone(),
        verification,
    })
}

/// Verify the artifact at `path` against the vault at `root`.
pub fn verify_file(
    root: &Path,
    path: &Path,
    options: &VerifyOptions,
) -> Result<Verification, ArtifactError> {
    match read_artifact(path)? {
        Some(bytes) => verify_bytes(root, &bytes, options),
        None => Ok(Verification::refused(
            "input_too_large",
            &date::format(options.today),
        )),
    }
}

/// Verify an artifact's bytes (read with a cap) against the vault at `root`.
pub fn verify_bytes(
    root: &Path,
    bytes: &[u8],
    options: &VerifyOptions,
) -> Result<Verification, ArtifactError> {
    verify_compiled(root, Input::Bytes(bytes), options).map_err(|e| match e {
        VerifyError::Compile(source) => ArtifactError::Compile {
            root: root.to_path_buf(),
            source,
        },
    })
}

/// The artifact's bytes, or `None` when it exceeds the largest artifact.
fn read_artifact(path: &Path) -> Result<Option<Vec<u8>>, ArtifactError> {
    let cannot = |source| ArtifactError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = open_regular(path, Links::Refuse).map_err(cannot)?;
    let mut buf = Vec::new();
    file.take(MAX_MAX_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| cannot(FileError::Io(e)))?;
    Ok((buf.len() <= MAX_MAX_BYTES).then_some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "---\nid: D-001\ntitle: Cache\nkind: decision\nstatus: accepted\nsensitivity: public\ndate: 2026-01-01\n---\nWe cache things.\n";

    #[test]
    fn declared_artifacts_compile_then_verify_current_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        std::fs::create_dir_all(project.join("decisions")).unwrap();
        std::fs::write(project.join("decisions/D-001.md"), NOTE).unwrap();
        let config =
            Config::parse("[[compile]]\noutput = \"ctx.json\"\nquery = \"cache\"\n").unwrap();
        let today = date::parse("2026-11-30").unwrap();

        let compiled: Vec<ArtifactCompiled> = compile_declared(project, &config, today)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(matches!(
            &compiled[..],
            [ArtifactCompiled::Compiled { output, bytes }]
                if output == Path::new("ctx.json") && *bytes > 0
        ));
        assert_eq!(
            serde_json::to_value(&compiled[0]).unwrap()["status"],
            "compiled"
        );

        let verified: Vec<ArtifactVerified> = verify_declared(project, &config, today)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(verified[0].verification.status, VerifyStatus::Current);
        let line = serde_json::to_value(&verified[0]).unwrap();
        assert_eq!(line["path"], "ctx.json");
        assert_eq!(line["status"], "current");

        std::fs::remove_file(project.join("ctx.json")).unwrap();
        let missing = verify_declared(project, &config, today)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(missing.verification.status, VerifyStatus::Stale);
        assert_eq!(missing.verification.reasons, ["artifact_missing"]);

        let none = Config::default();
        assert!(matches!(
            compile_declared(project, &none, today).map(|_| ()),
            Err(ArtifactError::NoneDeclared)
        ));
    }
}
