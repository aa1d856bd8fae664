//! kapi: a git-native context ledger.
#![warn(clippy::print_stdout, clippy::print_stderr)]
pub mod compile;
pub mod vault;

pub mod atomic;
pub mod check;
pub mod config;
pub mod digest;
pub mod formats;
pub mod fsutil;
pub mod git;
pub mod hooks;

#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub mod context;
pub mod ops;
pub mod store;
pub mod terminal;
pub mod wording;
