//! Who is acting. Attribution, not authentication: anyone who can set an
//! environment variable or a git identity can claim any name.
//!
//! - `KAPI_AGENT=<name>` (with `KAPI_SESSION=<id>`): an agent. The hooks and
//!   any server set these.
//! - `CLAUDECODE=1` (set by Claude Code for the commands it runs): the agent
//!   `claude-code`, session from `KAPI_SESSION`.
//! - `KAPI_TOOL=<name>`: a tool (kapi's own CI step, with `KAPI_SESSION`).
//! - Otherwise a person, named by git identity: `user.email`, else
//!   `user.name`, else `unnamed`.

use super::record::{Actor, ActorKind};

/// The agent hosts kapi recognises from their environment.
pub const HOSTS: &[(&str, &str, &str)] = &[("CLAUDECODE", "1", "claude-code")];

/// Detect the actor from an environment lookup and the git identity.
pub fn detect(
    var: impl Fn(&str) -> Option<String>,
    git_identity: impl FnOnce() -> (Option<String>, Option<String>),
) -> Actor {
    let non_empty = |name: &str| {
        var(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let session = non_empty("KAPI_SESSION");
    if let Some(name) = non_empty("KAPI_AGENT") {
        return Actor {
            kind: ActorKind::Agent,
            name,
            session,
        };
    }
    for (variable, value, name) in HOSTS {
        if non_empty(variable).as_deref() == Some(value) {
            return Actor {
                kind: ActorKind::Agent,
                name: (*name).to_owned(),
                session,
            };
        }
    }
    // Checked after the agent hosts: an agent cannot make itself a tool.
    if let Some(name) = non_empty("KAPI_TOOL") {
        return Actor {
            kind: ActorKind::Tool,
            name,
            session,
        };
    }
    let (email, name) = git_identity();
    let name = email
        .filter(|e| !e.trim().is_empty())
        .or(name.filter(|n| !n.trim().is_empty()))
        .unwrap_or_else(|| "unnamed".to_owned());
    Actor {
        kind: ActorKind::Person,
        name,
        session: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn hosts_and_overrides() {
        let a = detect(env(&[("CLAUDECODE", "1"), ("KAPI_SESSION", "s1")]), || {
            (None, None)
        });
        assert_eq!(
            (a.kind, a.name.as_str(), a.session.as_deref()),
            (ActorKind::Agent, "claude-code", Some("s1"))
        );
        let a = detect(env(&[("CLAUDECODE", "1"), ("KAPI_AGENT", "codex")]), || {
            (None, None)
        });
        assert_eq!(a.name, "codex");
        let p = detect(env(&[]), || {
            (Some("ada@example.com".into()), Some("Ada".into()))
        });
        assert_eq!(
            (p.kind, p.name.as_str()),
            (ActorKind::Person, "ada@example.com")
        );
        let p = detect(env(&[]), || (None, Some("Ada".into())));
        assert_eq!(p.name, "Ada");
        assert_eq!(detect(env(&[]), || (None, None)).name, "unnamed");
    }
}
