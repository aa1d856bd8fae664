//! kapi: a git-native context ledger.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod check;
pub mod config;
pub mod contextfiles;
pub mod rulesfile;

#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
