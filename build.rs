//! Link the release binaries as position-dependent executables on Linux: a
//! PIE binary of this size applies ~27,000 relative relocations at every
//! start, copying the pages they touch, which is most of what a short
//! `kapi context note` costs an agent beyond its own work.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    if linux && release {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
