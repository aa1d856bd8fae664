//! kapi: a git-native context ledger.
#![warn(clippy::print_stdout, clippy::print_stderr)]
pub mod compile;
pub mod vault;

pub(crate) mod atomic;
pub(crate) mod check;
pub mod config;
pub mod digest;
pub mod formats;
pub(crate) mod fsutil;
pub(crate) mod git;
pub(crate) mod hooks;
pub(crate) mod mcp;

#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub mod context;
pub mod ops;
pub mod store;
pub(crate) mod terminal;
pub(crate) mod wording;
