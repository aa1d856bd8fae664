use std::io::Read;
use std::path::PathBuf;

use super::Ctx;
use super::vault_args::VaultArgs;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::Out;
use crate::compile::verify::{Expected, VerifyOptions};
use crate::compile::{self, MAX_MAX_BYTES, Ranking, RequestError, Resolved, artifacts};

/// Say whether a compiled context is current, stale or refused.
///
/// Checks the artifact's structure and content digest, then recompiles its
/// recipe over the current permitted vault (public only unless
/// --max-sensitivity or --allow says otherwise) at --today and compares.
/// The --expect-* options bind your own intended parameters instead of
/// trusting the artifact's. Paths and URLs inside the artifact are never
/// opened. This is unsigned content binding: `signature_verified` and
/// `execution_authorized` are always false.
///
/// Exit codes: 0 current, 1 stale, 3 refused, 2 usage or configuration
/// error, 5 the vault cannot be read.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The compiled report, saved unchanged (`-` reads stdin).
    #[arg(value_name = "ARTIFACT", required_unless_present = "all")]
    pub artifact: Option<PathBuf>,
    #[command(flatten)]
    pub vault: VaultArgs,
    /// Expect exactly these targets, comma-separated (empty: none).
    #[arg(long, value_name = "IDS")]
    pub expect_targets: Option<String>,
    /// Expect this query (empty: none).
    #[arg(long, value_name = "TEXT")]
    pub expect_query: Option<String>,
    /// Expect this ranker.
    #[arg(long, value_name = "RANKER")]
    pub expect_ranking: Option<String>,
    /// Expect this max_docs.
    #[arg(long, value_name = "N")]
    pub expect_max_docs: Option<usize>,
    /// Expect this max_bytes.
    #[arg(long, value_name = "BYTES")]
    pub expect_max_bytes: Option<usize>,
    /// Expect this agent (empty: none).
    #[arg(long, value_name = "NAME")]
    pub expect_agent: Option<String>,
    /// Verify every `[[compile]]` artifact kapi.toml declares against its
    /// declared recipe and grant; exit 1 if any is stale, 3 if any is refused.
    #[arg(long, conflicts_with_all = ["artifact", "root", "max_sensitivity", "allow"])]
    pub all: bool,
    /// Accepted for compatibility: the output is always JSON.
    #[arg(long, hide = true)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let request = args.vault.request(&ctx.cwd);
    let resolved = request.resolve(|| ctx.env.now_ms())?;
    if args.all {
        return verify_all(&resolved);
    }
    let none_if_empty = |s: String| Some(s).filter(|s| !s.trim().is_empty());
    let expected = Expected {
        targets: args.expect_targets.map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        }),
        query: args.expect_query.map(none_if_empty),
        ranking: (args.expect_ranking.as_deref())
            .map(Ranking::requested)
            .transpose()
            .map_err(RequestError::from)?,
        max_docs: args.expect_max_docs,
        max_bytes: args.expect_max_bytes,
        agent: args.expect_agent.map(none_if_empty),
    };
    let vault = request.vault(&resolved)?;
    let options = VerifyOptions {
        today: resolved.today,
        grant: vault.grant,
        expected,
        scope: Default::default(),
        layout: vault.layout,
    };
    let root = vault.root;
    let path = args.artifact.unwrap_or_default();
    let verdict = if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_MAX_BYTES as u64 + 1)
            .read_to_end(&mut buf)?;
        artifacts::verify_bytes(&root, &buf, &options)?
    } else {
        artifacts::verify_file(&root, &ctx.cwd.join(&path), &options)?
    };
    let mut out = Out::new();
    out.raw(&compile::serialize(&verdict.to_json()))?;
    out.flush()?;
    Ok(verdict.status.into())
}

fn verify_all(resolved: &Resolved) -> Result<Exit, CliError> {
    let mut out = Out::new();
    let mut worst = Exit::Ok;
    let Resolved {
        project,
        config,
        today,
    } = resolved;
    for verified in artifacts::verify_declared(project, config, *today)? {
        let verified = verified?;
        out.raw(&compile::serialize(&verified.to_json()))?;
        worst = match (worst, verified.verification.status.into()) {
            (Exit::Refused, _) | (_, Exit::Refused) => Exit::Refused,
            (Exit::Failed, _) | (_, Exit::Failed) => Exit::Failed,
            _ => Exit::Ok,
        };
    }
    out.flush()?;
    Ok(worst)
}
