//! kapi's MCP server in Codex's project config, `.codex/config.toml`:
//!
//! ```toml
//! [mcp_servers.kapi]
//! command = "kapi"
//! args = ["mcp"]
//! ```
//!
//! People write this file by hand, so it is edited as text and never
//! written out again from a parsed value: install appends kapi's table
//! after one newline, in the file's line ending, and uninstall takes
//! exactly those bytes off again, so every other byte (comments, other
//! servers, key order, blank lines) stays as it was. toml_edit, a
//! format-preserving parser, says what is there and checks each edit; an
//! entry of kapi's that is not where install put it (moved, or written by
//! hand) is removed through it, which keeps the rest as written but ends
//! every line with `\n`.
//!
//! Text in, text out: the file is read and written by the caller.

use toml_edit::{Array, DocumentMut, Item, TableLike, Value};

use super::{MCP_ARGS, MCP_COMMAND, MCP_SERVER};

/// The table Codex reads its MCP servers from.
const SERVERS: &str = "mcp_servers";

/// What a config holds under `mcp_servers.kapi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Absent,
    /// kapi's, as install writes it.
    Kapis,
    /// Something else, which kapi leaves alone.
    Foreign,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("line {line}, column {column}: {message}")]
    Parse {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("`mcp_servers` is {0}, not a table")]
    NotATable(&'static str),
    #[error("`mcp_servers` is an inline table, which kapi does not rewrite")]
    Inline,
    #[error("kapi's table cannot be added at its end ({0})")]
    Unappendable(String),
}

/// What `text` holds under `mcp_servers.kapi`. An `mcp_servers` that is
/// not a table holds no server of kapi's (install says what is wrong).
pub fn server(text: &str) -> Result<Server, ConfigError> {
    let doc = parse(text)?;
    Ok(
        match servers(&doc).ok().flatten().and_then(|s| s.get(MCP_SERVER)) {
            None => Server::Absent,
            Some(entry) if is_kapis(entry) => Server::Kapis,
            Some(_) => Server::Foreign,
        },
    )
}

/// `text` with kapi's server added at its end, or `None` when there is
/// an entry named `kapi` already (kapi's or not).
pub fn add(text: &str) -> Result<Option<String>, ConfigError> {
    let doc = parse(text)?;
    if servers(&doc)?.is_some_and(|s| s.contains_key(MCP_SERVER)) {
        return Ok(None);
    }
    if doc.get(SERVERS).is_some_and(Item::is_inline_table) {
        return Err(ConfigError::Inline);
    }
    let nl = newline(text);
    let sep = if text.is_empty() { "" } else { nl };
    let added = format!("{text}{sep}{}", table(nl));
    match server(&added) {
        Ok(Server::Kapis) => Ok(Some(added)),
        Ok(_) => Err(ConfigError::Unappendable("it reads differently".into())),
        Err(e) => Err(ConfigError::Unappendable(e.to_string())),
    }
}

/// `text` without kapi's server, or `None` when kapi's is not there.
/// What install appended is taken off byte for byte; an entry of kapi's
/// elsewhere is removed through toml_edit, with an `mcp_servers` table
/// left empty that has no header of its own.
pub fn remove(text: &str) -> Result<Option<String>, ConfigError> {
    if server(text)? != Server::Kapis {
        return Ok(None);
    }
    let nl = newline(text);
    if let Some(rest) = text.strip_suffix(&table(nl)) {
        let rest = rest.strip_suffix(nl).unwrap_or(rest);
        if matches!(server(rest), Ok(Server::Absent)) {
            return Ok(Some(rest.to_owned()));
        }
    }
    let mut doc = parse(text)?;
    if let Some(servers) = doc.get_mut(SERVERS).and_then(Item::as_table_like_mut) {
        servers.remove(MCP_SERVER);
    }
    if doc
        .get(SERVERS)
        .and_then(Item::as_table)
        .is_some_and(|t| t.is_implicit() && t.is_empty())
    {
        doc.remove(SERVERS);
    }
    Ok(Some(doc.to_string()))
}

/// kapi's table, each line ended with `nl`.
fn table(nl: &str) -> String {
    let args: Array = MCP_ARGS.iter().copied().collect();
    format!(
        "[{SERVERS}.{MCP_SERVER}]{nl}command = {}{nl}args = {args}{nl}",
        Value::from(MCP_COMMAND)
    )
}

/// The file's line ending: CRLF when its first line ends so.
fn newline(text: &str) -> &'static str {
    match text.find('\n') {
        Some(at) if text[..at].ends_with('\r') => "\r\n",
        _ => "\n",
    }
}

fn parse(text: &str) -> Result<DocumentMut, ConfigError> {
    text.parse().map_err(|e: toml_edit::TomlError| {
        let at = e.span().map_or(0, |s| s.start);
        let before = text.get(..at).unwrap_or(text);
        ConfigError::Parse {
            line: before.matches('\n').count() + 1,
            column: before.rsplit('\n').next().unwrap_or("").chars().count() + 1,
            message: e.message().to_owned(),
        }
    })
}

/// `mcp_servers` when it is there: a table, or an error naming what it is.
fn servers(doc: &DocumentMut) -> Result<Option<&dyn TableLike>, ConfigError> {
    doc.get(SERVERS)
        .map(|item| {
            item.as_table_like()
                .ok_or(ConfigError::NotATable(item.type_name()))
        })
        .transpose()
}

/// Whether an entry is kapi's: `command` and `args` as install writes
/// them, and nothing else.
fn is_kapis(entry: &Item) -> bool {
    let Some(entry) = entry.as_table_like() else {
        return false;
    };
    let args = entry.get("args").and_then(Item::as_array);
    entry.len() == 2
        && entry.get("command").and_then(Item::as_str) == Some(MCP_COMMAND)
        && args.is_some_and(|a| {
            a.iter()
                .map(Value::as_str)
                .eq(MCP_ARGS.iter().map(|s| Some(*s)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KAPIS: &str = "[mcp_servers.kapi]\ncommand = \"kapi\"\nargs = [\"mcp\"]\n";

    /// Install then uninstall gives back every byte.
    fn round_trip(before: &str) -> String {
        let installed = add(before).unwrap().expect("added");
        assert_eq!(server(&installed).unwrap(), Server::Kapis, "{installed}");
        assert_eq!(
            add(&installed).unwrap(),
            None,
            "installing again adds nothing"
        );
        assert_eq!(remove(&installed).unwrap().as_deref(), Some(before));
        installed
    }

    #[test]
    fn a_new_config_holds_kapis_table_only() {
        assert_eq!(round_trip(""), KAPIS);
        assert_eq!(server("").unwrap(), Server::Absent);
    }

    #[test]
    fn install_appends_and_uninstall_gives_back_every_byte() {
        let theirs = "# Codex, this project\nmodel = \"o3\"   # fast enough\n\n[mcp_servers.docs]\nargs = [\"-y\", \"docs-mcp\"]\ncommand = \"npx\"\n\n[mcp_servers.docs.env]\nTOKEN = \"x\"\n\n[profiles.quick]\nmodel = 'o4-mini'\n# the end\n";
        let installed = round_trip(theirs);
        assert_eq!(installed, format!("{theirs}\n{KAPIS}"));
        // No final newline, CRLF, an explicit empty [mcp_servers], dotted
        // keys, only comments, only whitespace.
        round_trip("model = \"o3\"");
        round_trip("# only a comment");
        round_trip("\n\n");
        round_trip("[mcp_servers]\n");
        round_trip("mcp_servers.other.command = \"x\"\n[tui]\nnotifications = true\n");
        let crlf = round_trip("model = \"o3\"\r\n[tui]\r\nnotifications = true\r\n");
        assert!(crlf.ends_with("[mcp_servers.kapi]\r\ncommand = \"kapi\"\r\nargs = [\"mcp\"]\r\n"));
    }

    #[test]
    fn a_kapi_entry_that_is_not_kapis_is_left_alone() {
        for theirs in [
            "[mcp_servers.kapi]\ncommand = \"/opt/kapi\"\nargs = [\"mcp\"]\n",
            "[mcp_servers.kapi]\ncommand = \"kapi\"\nargs = [\"mcp\"]\nstartup_timeout_sec = 20\n",
            "[mcp_servers.kapi]\ncommand = \"kapi\"\nargs = [\"mcp\", \"--x\"]\n",
            "[mcp_servers]\nkapi = \"not a table\"\n",
        ] {
            assert_eq!(server(theirs).unwrap(), Server::Foreign, "{theirs}");
            assert_eq!(add(theirs).unwrap(), None, "{theirs}");
            assert_eq!(remove(theirs).unwrap(), None, "{theirs}");
        }
    }

    #[test]
    fn kapis_entry_written_elsewhere_is_removed_with_the_rest_kept() {
        // Written by hand before another server, in another style.
        let text = "[mcp_servers.kapi]\nargs = ['mcp']\ncommand = 'kapi'\n\n# docs\n[mcp_servers.docs]\ncommand = \"npx\"\n";
        assert_eq!(server(text).unwrap(), Server::Kapis);
        assert_eq!(
            remove(text).unwrap().as_deref(),
            Some("\n# docs\n[mcp_servers.docs]\ncommand = \"npx\"\n")
        );
        // Install's table, with a server added after it: the header-less
        // `mcp_servers` stays for the other one.
        let later = format!("a = 1\n\n{KAPIS}\n[mcp_servers.b]\ncommand = \"b\"\n");
        assert_eq!(
            remove(&later).unwrap().as_deref(),
            Some("a = 1\n\n[mcp_servers.b]\ncommand = \"b\"\n")
        );
        // Inline and dotted forms.
        let inline = "mcp_servers = { kapi = { command = \"kapi\", args = [\"mcp\"] } }\n";
        assert_eq!(server(inline).unwrap(), Server::Kapis);
        assert_eq!(
            remove(inline).unwrap().as_deref(),
            Some("mcp_servers = {}\n")
        );
        let dotted =
            "x = 1\nmcp_servers.kapi.command = \"kapi\"\nmcp_servers.kapi.args = [\"mcp\"]\n";
        assert_eq!(server(dotted).unwrap(), Server::Kapis);
        assert_eq!(remove(dotted).unwrap().as_deref(), Some("x = 1\n"));
    }

    #[test]
    fn what_kapi_cannot_edit_is_an_error_saying_where() {
        let err = add("model = \"o3\"\n[mcp_servers\n").unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::Parse {
                    line: 2,
                    column: 13,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("line 2, column 13: "), "{err}");
        assert!(matches!(
            server("a = ").unwrap_err(),
            ConfigError::Parse { line: 1, .. }
        ));
        let err = add("mcp_servers = 3\n").unwrap_err();
        assert_eq!(err.to_string(), "`mcp_servers` is integer, not a table");
        let err = add("[[mcp_servers]]\nx = 1\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`mcp_servers` is array of tables, not a table"
        );
        assert!(matches!(
            add("mcp_servers = { other = { command = \"x\" } }\n").unwrap_err(),
            ConfigError::Inline
        ));
        // Status reads no server there; install says what is wrong.
        assert_eq!(server("mcp_servers = 3\n").unwrap(), Server::Absent);
    }
}
