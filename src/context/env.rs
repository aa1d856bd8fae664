//! The environment as a value: the clock, randomness and the variables the
//! actor is detected from, behind one small trait. [`ProcessEnv`] reads the
//! process (`KAPI_NOW`, `KAPI_SEED`, `/dev/urandom`, the environment);
//! `FixedEnv` (built for tests only) pins everything. Both are read on
//! every call, so a long-running process (the MCP server to come) gets a
//! fresh clock and fresh randomness for every operation it records.

#[cfg(test)]
use std::collections::BTreeMap;
use std::ffi::OsString;
#[cfg(test)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::ops::actor::{self, ActorError};
use crate::ops::record::Actor;
use crate::store::Store;

/// A value of the environment kapi cannot use; the message says how to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EnvError(String);

/// Where a use case reads the time, randomness and environment variables.
pub trait Env: Send + Sync {
    /// The clock in Unix milliseconds, read now.
    fn now_ms(&self) -> Result<u64, EnvError>;
    /// The machine's own clock, whatever `now_ms` is pinned to: what an
    /// operation dated ahead is measured against.
    fn wall_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
    /// Fresh randomness for ids.
    fn random(&self) -> u128;
    /// An environment variable (`KAPI_AGENT`, `KAPI_SESSION`, ...).
    fn var_os(&self, name: &str) -> Option<OsString>;
    /// Whether the process ends with this call (a command line run): large
    /// values are then left to the operating system instead of being freed.
    fn ends_with_call(&self) -> bool {
        false
    }

    /// An environment variable, if set and valid UTF-8.
    fn var(&self, name: &str) -> Option<String> {
        self.var_os(name).and_then(|v| v.into_string().ok())
    }

    /// `KAPI_LOCK_TIMEOUT_MS`: how long a writer waits for a lock.
    fn lock_timeout(&self) -> Result<Option<Duration>, EnvError> {
        let Some(text) = self.var("KAPI_LOCK_TIMEOUT_MS") else {
            return Ok(None);
        };
        text.trim()
            .parse::<u64>()
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|_| {
                EnvError(format!(
                    "KAPI_LOCK_TIMEOUT_MS={text} is not a number of milliseconds"
                ))
            })
    }

    /// Who is acting: `KAPI_AGENT`/`KAPI_TOOL`/... of this environment, else
    /// the repository's git identity.
    fn actor(&self, store: &Store) -> Result<Actor, ActorError> {
        actor::detect(
            |name| self.var_os(name),
            || {
                let config = store.repo().config_snapshot();
                (
                    config.string("user.email").map(|v| v.to_string()),
                    config.string("user.name").map(|v| v.to_string()),
                )
            },
        )
    }
}

/// The environment of this process.
#[derive(Debug, Default)]
pub struct ProcessEnv {
    ends_with_call: bool,
    /// Calls that read seeded randomness: each gets its own value, so a
    /// long-running process stays fresh per call under `KAPI_SEED` too.
    seeded_calls: std::sync::atomic::AtomicU64,
}

impl ProcessEnv {
    /// For a command line run that ends after one call.
    pub fn for_one_command() -> Self {
        Self {
            ends_with_call: true,
            ..Self::default()
        }
    }
}

impl Env for ProcessEnv {
    /// `KAPI_NOW` (RFC 3339 or Unix milliseconds) pins the clock: a test facility.
    fn now_ms(&self) -> Result<u64, EnvError> {
        match self.var("KAPI_NOW").filter(|v| !v.is_empty()) {
            Some(text) => parse_now(&text).ok_or_else(|| {
                EnvError(format!(
                    "KAPI_NOW={text} is neither an RFC 3339 instant nor Unix milliseconds"
                ))
            }),
            None => Ok(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)),
        }
    }

    /// `KAPI_SEED` (an integer) makes it repeatable: a test facility; ids
    /// still never sort backwards.
    fn random(&self) -> u128 {
        match self
            .var("KAPI_SEED")
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            Some(seed) => {
                let n = self
                    .seeded_calls
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                seeded(seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            }
            None => os_random(),
        }
    }

    fn var_os(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }

    fn ends_with_call(&self) -> bool {
        self.ends_with_call
    }
}

/// An environment pinned for tests: a fixed clock, repeatable randomness
/// (a fresh value on every call, from a seed) and only the variables given.
#[cfg(test)]
#[derive(Debug)]
pub struct FixedEnv {
    now_ms: AtomicU64,
    seed: AtomicU64,
    vars: BTreeMap<String, OsString>,
    one_call: bool,
}

#[cfg(test)]
impl FixedEnv {
    /// The clock at `now_ms`, randomness from `seed`, no variables.
    pub fn new(now_ms: u64, seed: u64) -> Self {
        Self {
            now_ms: AtomicU64::new(now_ms),
            seed: AtomicU64::new(seed),
            vars: BTreeMap::new(),
            one_call: false,
        }
    }

    /// As a command line run: every read goes through the checkpoint's
    /// files, none through a fold kept between calls.
    pub fn one_call(mut self) -> Self {
        self.one_call = true;
        self
    }

    /// With the variable `name` set to `value` (e.g. `KAPI_AGENT`).
    pub fn with_var(mut self, name: &str, value: &str) -> Self {
        self.vars.insert(name.to_owned(), value.into());
        self
    }

    /// Move the clock forward.
    pub fn advance(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

#[cfg(test)]
impl Env for FixedEnv {
    fn now_ms(&self) -> Result<u64, EnvError> {
        Ok(self.now_ms.load(Ordering::SeqCst))
    }

    fn random(&self) -> u128 {
        seeded(self.seed.fetch_add(1, Ordering::SeqCst))
    }

    fn var_os(&self, name: &str) -> Option<OsString> {
        self.vars.get(name).cloned()
    }

    fn ends_with_call(&self) -> bool {
        self.one_call
    }
}

fn parse_now(text: &str) -> Option<u64> {
    if let Ok(ms) = text.trim().parse::<u64>() {
        return Some(ms);
    }
    let t =
        time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
            .ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

fn seeded(seed: u64) -> u128 {
    (u128::from(splitmix(seed)) << 64) | u128::from(splitmix(seed ^ 0x9e37_79b9))
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn os_random() -> u128 {
    use std::io::Read;
    let mut buf = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok()
    {
        return u128::from_le_bytes(buf);
    }
    // No /dev/urandom: mix the clock, the process id and std's random hash keys.
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    (u128::from(h.finish()) << 64) | u128::from(splitmix(h.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_env_gives_fresh_randomness_per_call_and_a_pinned_clock() {
        let env = FixedEnv::new(1_800_000_000_000, 7).with_var("KAPI_AGENT", "claude");
        assert_ne!(env.random(), env.random());
        assert_eq!(env.now_ms().unwrap(), 1_800_000_000_000);
        env.advance(5);
        assert_eq!(env.now_ms().unwrap(), 1_800_000_000_005);
        assert_eq!(env.var("KAPI_AGENT").as_deref(), Some("claude"));
        assert_eq!(env.var("HOME"), None);
        // The seed gives what KAPI_SEED gives a process.
        assert_eq!(FixedEnv::new(0, 7).random(), seeded(7));
    }

    #[test]
    fn the_clock_is_rfc3339_or_milliseconds() {
        assert_eq!(parse_now("1000"), Some(1000));
        assert_eq!(parse_now("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_now("soon"), None);
    }
}
