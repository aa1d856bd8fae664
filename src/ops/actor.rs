//! Who is acting. Attribution, not authentication: anyone who can set an
//! environment variable or a git identity can claim any name.
//!
//! - `KAPI_AGENT=<name>` (with `KAPI_SESSION=<id>`): an agent. The hooks and
//!   any server set these.
//! - `CLAUDECODE` set to anything (Claude Code sets `1` for the commands it
//!   runs; `0`, `true` or `yes` name the agent just the same): the agent
//!   `claude-code`, session from `KAPI_SESSION`.
//! - `KAPI_TOOL=<name>`: a tool (kapi's own CI step, with `KAPI_SESSION`).
//! - Otherwise a person, named by git identity: `user.email`, else
//!   `user.name`, else `unnamed`.
//!
//! Detection fails closed: one of these variables set to nothing, to
//! whitespace or to bytes that are not UTF-8 is an error, never a person.

use std::ffi::OsString;

use super::record::{Actor, ActorKind};

/// The variables that name who acts, besides git identity.
pub const VARIABLES: &[&str] = &["KAPI_AGENT", "KAPI_SESSION", "KAPI_TOOL", "CLAUDECODE"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActorError {
    #[error(
        "{0} is set but empty; set it to a name (or unset it): kapi does not take an agent whose name it cannot read for a person"
    )]
    Empty(&'static str),
    #[error(
        "{0} is set but is not UTF-8; set it to a name in UTF-8 (or unset it): kapi does not take an agent whose name it cannot read for a person"
    )]
    NotUtf8(&'static str),
}

/// The agent hosts kapi recognises from their environment: the variable
/// the host sets for the commands it runs, and the agent it names. Any
/// value names the host (a value is never read as "not an agent": that
/// would fail open); a value that is empty, whitespace or not UTF-8 is an
/// error, as for every variable here.
pub const HOSTS: &[(&str, &str)] = &[("CLAUDECODE", "claude-code")];

/// An agent's name given by a client (the MCP client's `clientInfo.name`),
/// held to what `KAPI_AGENT` is held to and to what the log stores: trimmed,
/// not empty, at most [`super::record::MAX_NAME`] bytes, no control
/// characters. The error says what is wrong with it.
pub fn agent_name(raw: &str) -> Result<String, String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err("the client's name (clientInfo.name in initialize) is empty; kapi names the agent by it, so give one".into());
    }
    if name.len() > super::record::MAX_NAME {
        return Err(format!(
            "the client's name (clientInfo.name in initialize) has {} bytes; an agent's name has at most {}",
            name.len(),
            super::record::MAX_NAME
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("the client's name (clientInfo.name in initialize) holds a control character; an agent's name is one line of text".into());
    }
    Ok(name.to_owned())
}

/// Detect the actor from an environment lookup and the git identity.
pub fn detect(
    var: impl Fn(&str) -> Option<OsString>,
    git_identity: impl FnOnce() -> (Option<String>, Option<String>),
) -> Result<Actor, ActorError> {
    let mut values = [None, None, None, None];
    for (slot, name) in values.iter_mut().zip(VARIABLES) {
        let Some(raw) = var(name) else { continue };
        let text = raw.into_string().map_err(|_| ActorError::NotUtf8(name))?;
        let text = text.trim();
        if text.is_empty() {
            return Err(ActorError::Empty(name));
        }
        *slot = Some(text.to_owned());
    }
    let [agent, session, tool, claude] = values;
    if let Some(name) = agent {
        return Ok(Actor {
            kind: ActorKind::Agent,
            name: name.into(),
            session: session.map(Into::into),
        });
    }
    for (variable, name) in HOSTS {
        debug_assert_eq!(*variable, "CLAUDECODE");
        if claude.is_some() {
            return Ok(Actor {
                kind: ActorKind::Agent,
                name: (*name).into(),
                session: session.map(Into::into),
            });
        }
    }
    // Checked after the agent hosts: an agent cannot make itself a tool.
    if let Some(name) = tool {
        return Ok(Actor {
            kind: ActorKind::Tool,
            name: name.into(),
            session: session.map(Into::into),
        });
    }
    let (email, name) = git_identity();
    let name = email
        .filter(|e| !e.trim().is_empty())
        .or(name.filter(|n| !n.trim().is_empty()))
        .unwrap_or_else(|| "unnamed".to_owned());
    Ok(Actor {
        kind: ActorKind::Person,
        name: name.into(),
        session: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn a_variable_set_to_nothing_readable_is_an_error_never_a_person() {
        for value in ["", "  ", "\t"] {
            let e = detect(env(&[("KAPI_AGENT", value)]), || (Some("a@b".into()), None));
            assert_eq!(e, Err(ActorError::Empty("KAPI_AGENT")));
        }
        let e = detect(env(&[("KAPI_TOOL", " ")]), || (None, None));
        assert_eq!(e, Err(ActorError::Empty("KAPI_TOOL")));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let bad = |k: &str| (k == "KAPI_AGENT").then(|| OsString::from_vec(vec![0xff, 0x61]));
            assert_eq!(
                detect(bad, || (None, None)),
                Err(ActorError::NotUtf8("KAPI_AGENT"))
            );
        }
    }

    #[test]
    fn a_client_name_is_bounded_like_kapi_agent() {
        assert_eq!(agent_name("  claude-code ").as_deref(), Ok("claude-code"));
        assert!(agent_name(" ").is_err());
        assert!(agent_name(&"a".repeat(257)).is_err());
        assert!(agent_name(&"a".repeat(256)).is_ok());
        assert!(agent_name("a\nb").is_err());
    }

    #[test]
    fn hosts_and_overrides() {
        let a = detect(env(&[("CLAUDECODE", "1"), ("KAPI_SESSION", "s1")]), || {
            (None, None)
        })
        .unwrap();
        assert_eq!(
            (a.kind, a.name.as_str(), a.session.as_deref()),
            (ActorKind::Agent, "claude-code", Some("s1"))
        );
        // Whatever the value: a host's variable never fails open.
        for value in ["0", "true", "yes", "false", "no"] {
            let a = detect(env(&[("CLAUDECODE", value)]), || {
                (Some("ada@example.com".into()), None)
            })
            .unwrap();
            assert_eq!((a.kind, a.name.as_str()), (ActorKind::Agent, "claude-code"));
        }
        assert_eq!(
            detect(env(&[("CLAUDECODE", " ")]), || (None, None)),
            Err(ActorError::Empty("CLAUDECODE"))
        );
        let a = detect(env(&[("CLAUDECODE", "1"), ("KAPI_AGENT", "codex")]), || {
            (None, None)
        })
        .unwrap();
        assert_eq!(a.name, "codex");
        let p = detect(env(&[]), || {
            (Some("ada@example.com".into()), Some("Ada".into()))
        })
        .unwrap();
        assert_eq!(
            (p.kind, p.name.as_str()),
            (ActorKind::Person, "ada@example.com")
        );
        let p = detect(env(&[]), || (None, Some("Ada".into()))).unwrap();
        assert_eq!(p.name, "Ada");
        assert_eq!(detect(env(&[]), || (None, None)).unwrap().name, "unnamed");
    }
}
