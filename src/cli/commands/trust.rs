//! `kapi trust`: the keys whose signatures vouch for decisions.

use clap::Subcommand;

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::context::trust::{add, list};

/// The allowed-signers file of `[trust]` (git's format): which SSH keys
/// sign for which person (and `ci` for the CI's merge signals and
/// establishments). It counts as the default branch holds it; an edit in
/// the work tree grants nothing until it is committed there
/// (docs/security.md, "Signed decisions").
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: TrustCommand,
}

#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// (for people) List a person's public key (or the CI's, as `ci`) for the namespace `kapi`.
    Add(AddArgs),
    /// The keys the default branch's allowed-signers file lists.
    List(ListArgs),
}

/// (for people) List `PRINCIPAL`'s OpenSSH public key in the work tree's
/// allowed-signers file, for the namespace `kapi`, and name the file in
/// kapi.toml's `[trust]` when it has none. Commit both to the default
/// branch for the key to count. An agent or a tool is refused (exit 4).
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Who the key signs for: the person's git user.email (as their
    /// decisions name them), or `ci`.
    #[arg(value_name = "PRINCIPAL")]
    pub principal: String,
    /// The public key file (`~/.ssh/id_ed25519.pub`).
    #[arg(value_name = "KEY-FILE")]
    pub key_file: std::path::PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = ctx.session()?;
    let mut out = Out::new();
    match args.command {
        TrustCommand::Add(a) => {
            let added = add(&session, &a.principal, &a.key_file)?;
            if a.json {
                out.json(&added)?;
                return Ok(Exit::Ok);
            }
            out.line(if added.already {
                format!(
                    "{} already lists {} for {}",
                    added.file, added.fingerprint, added.principal
                )
            } else {
                format!(
                    "listed {} for {} in {}",
                    added.fingerprint, added.principal, added.file
                )
            })?;
            if added.configured {
                out.line(format!(
                    "added [trust] allowed_signers = \"{}\" to kapi.toml",
                    added.file
                ))?;
            }
            out.note(format!(
                "it counts once committed on the default branch: `git add kapi.toml {} && git commit`, then push",
                added.file
            ))?;
        }
        TrustCommand::List(a) => {
            let listing = list(&session)?;
            if a.json {
                out.json(&listing)?;
                return Ok(Exit::Ok);
            }
            let mode = match listing.decisions {
                None => "no [trust] in kapi.toml: signatures are recorded, not verified",
                Some(crate::ops::trust::Mode::Shown) => {
                    "decisions = \"shown\": signatures are verified and shown, not required"
                }
                Some(crate::ops::trust::Mode::Signed) => {
                    "decisions = \"signed\": a person's decision counts only signed by their listed key"
                }
            };
            out.line(format!("{} ({mode})", listing.file))?;
            if !listing.on_default_branch {
                out.line("  not on the default branch: no key is listed yet")?;
            }
            for k in &listing.committed {
                let mut line = format!("  {}  {} {}", k.principals, k.algorithm, k.fingerprint);
                if let Some(after) = &k.valid_after {
                    line.push_str(&format!("  from {after}"));
                }
                if let Some(before) = &k.valid_before {
                    line.push_str(&format!("  until {before}"));
                }
                if !k.signs_kapi {
                    line.push_str(
                        "  (not for kapi: another namespace, or a certificate authority)",
                    );
                }
                out.line(line)?;
            }
            for bad in &listing.bad_lines {
                out.line(format!("  skipped {bad}"))?;
            }
            if listing.uncommitted_changes {
                out.note(format!(
                    "the work tree's {} differs from the default branch's: its changes grant nothing until committed there",
                    listing.file
                ))?;
            }
        }
    }
    Ok(Exit::Ok)
}
