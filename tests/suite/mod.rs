//! The end-to-end suites, one module per area.

mod agent_trust;
mod atlas;
mod axes;
mod check;
mod compiled_context;
mod context;
mod durability;
mod errors;
mod fuzz_corpus;
mod hardening;
mod harness;
mod hooks;
mod hostile_remote;
mod hostile_text;
mod mcp;
mod new_user;
mod new_user_check;
mod new_user_store;
mod new_user_ux;
mod oplog;
mod reset;
mod review;
mod snapshots;
mod sync;
mod vale;
mod workspace_trust;
