//! The one integration test binary (as jj's `cli/tests/runner.rs`): every
//! suite is a module of it, so the harness in `common` and the binary under
//! test are built once.

mod common;
mod suite;
