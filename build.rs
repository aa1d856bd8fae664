//! How the release binaries are linked on Linux, for the short commands an
//! agent or a hook starts many times (`kapi context note`, `kapi hook
//! pre-commit`, a one-page `kapi check`), whose time is mostly the process
//! itself:
//!
//! - position-dependent: a PIE binary of this size applies ~27,000
//!   relative relocations at every start, copying the pages they touch;
//! - with the functions those commands run placed together
//!   (`ci/link-order.txt`, made by `ci/link-order`): laid out by crate, a
//!   note touched ~100 windows of 64 KiB scattered over 16 MiB of code,
//!   each mapped at a page fault and unmapped at exit. Only when the linker
//!   takes a symbol ordering file (rust-lld, the default linker of Rust's
//!   own x86_64 Linux toolchains since 1.90; lld; mold): a trial link of an
//!   empty program with the same linker and flags decides, so another
//!   linker builds kapi as before. A list made by another compiler or for
//!   other dependencies names symbols this build does not have; the linker
//!   skips them, so a stale list places fewer functions and changes
//!   nothing else.
//!
//! And, in every profile, the CRC-32s that name the code a derived file
//! was made by (a fold checkpoint, a reader's, the kept histories, a
//! matcher's plan): computed here, not by every process that reads one
//! from half a megabyte of source embedded in the binary. Each is the CRC
//! of the files below, each after its length (`checkpoint::checksum`);
//! unit tests check each list against the sources the code names.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ORDER: &str = "ci/link-order.txt";

/// The files each code CRC is made of, under `src/`, in order.
const CODE: &[(&str, &[&str])] = &[
    (
        "KAPI_CODE_FOLD",
        &[
            "ops/fold.rs",
            "ops/fold/state.rs",
            "ops/fold/disagree.rs",
            "ops/fold/settle.rs",
            "ops/fold/checkpoint.rs",
            "ops/policy.rs",
            "ops/op.rs",
            "ops/forms.rs",
            "ops/record.rs",
            "ops/slim.rs",
            "ops/id.rs",
            "ops/scope.rs",
            "ops/axes.rs",
            "ops/trust.rs",
            "formats/allowed_signers.rs",
        ],
    ),
    (
        "KAPI_CODE_READER",
        &[
            "store/read.rs",
            "store/segment.rs",
            "store/content.rs",
            "store/newest.rs",
            "context/checkpointed.rs",
        ],
    ),
    ("KAPI_CODE_HISTORY", &["ops/history.rs"]),
    (
        "KAPI_CODE_PLAN",
        &[
            "check/matcher.rs",
            "check/case.rs",
            "check/rule.rs",
            "check/select.rs",
            "check/packed.rs",
            "check/table.rs",
        ],
    ),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER}");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let src = manifest.join("src");
    for (name, files) in CODE {
        let mut crc = crc32fast::Hasher::new();
        for file in *files {
            let path = src.join(file);
            println!("cargo:rerun-if-changed={}", path.display());
            let text =
                std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            crc.update(&(text.len() as u64).to_le_bytes());
            crc.update(&text);
        }
        println!("cargo:rustc-env={name}={:08x}", crc.finalize());
    }
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    if !(linux && release) {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    let order = manifest.join(ORDER);
    let args = ordering_args(&order);
    if order.is_file() && linker_takes(&args) {
        for arg in args {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}

/// The linker arguments that hand it `order` (the path cannot hold a comma:
/// `-Wl,` splits there).
fn ordering_args(order: &Path) -> Vec<String> {
    let path = order.display().to_string();
    if path.contains(',') {
        return Vec::new();
    }
    vec![
        format!("-Wl,--symbol-ordering-file={path}"),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ]
}

/// Whether an empty program links with `args`, by the compiler, linker
/// and flags this build uses.
fn linker_takes(args: &[String]) -> bool {
    if args.is_empty() {
        return false;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("link-probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .arg("--crate-type=bin")
        .arg("--edition=2021")
        .arg("-o")
        .arg(out.join("link-probe"));
    if let Ok(target) = std::env::var("TARGET") {
        probe.arg("--target").arg(target);
    }
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        probe.arg("-C").arg(format!("linker={linker}"));
    }
    if let Ok(flags) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    for arg in args {
        probe.arg("-C").arg(format!("link-arg={arg}"));
    }
    probe
        .arg(&source)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
