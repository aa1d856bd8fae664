use super::Ctx;
use super::vault_args::VaultArgs;
use crate::cli::exit::{CliError, Exit, compile_error};
use crate::cli::output::Out;
use crate::compile::{self, verify_claim::ClaimStatus};

/// Check a claim's quotes against the bytes of the capture it was taken from.
///
/// The claim (an id or a path relative to the vault) is resolved in the
/// permitted view; claims are always restricted, so give
/// `--max-sensitivity restricted`, and its payload is released only when
/// every evidence id it names is in that view. Each quote must equal the
/// capture's bytes between its `start` and `end` anchors. This checks the
/// anchors, not whether the quote supports the claim.
///
/// Exit codes: 0 verified, 1 a quote does not match its anchors, 3 refused
/// (not_found, ambiguous, withheld), 2 usage error or a malformed claim or
/// capture, 5 the vault cannot be read.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The claim: its id (C-001) or its path relative to the vault.
    #[arg(value_name = "CLAIM")]
    pub claim: String,
    #[command(flatten)]
    pub vault: VaultArgs,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let request = args.vault.request(&ctx.cwd);
    let resolved = request.resolve(|| ctx.env.now_ms())?;
    let vault = request.vault(&resolved)?;
    let verdict =
        compile::verify_claim::verify_claim(&vault.root, &args.claim, &vault.grant, &vault.layout)
            .map_err(|e| compile_error(e, &vault.root))?;
    let mut out = Out::new();
    out.raw(&compile::serialize(&verdict.value))?;
    out.flush()?;
    Ok(match verdict.status {
        ClaimStatus::Verified => Exit::Ok,
        ClaimStatus::Failed => Exit::Failed,
        ClaimStatus::Refused => Exit::Refused,
    })
}
