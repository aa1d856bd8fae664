use super::Ctx;
use super::vault_args::VaultArgs;
use crate::cli::exit::{CliError, Exit, compile_error};
use crate::cli::output::Out;
use crate::compile::artifacts::{self, ArtifactCompiled};
use crate::compile::{self, Options, Ranking, Recipe, RequestError, Resolved};

/// Compile decision records into a bounded JSON context for an agent.
///
/// Prints one `kapi.compiled-context/v1` report: compact JSON, sorted keys,
/// one trailing newline, never more than --max-bytes in all. Save it
/// unchanged and check it later with `kapi verify-context`. Only permitted
/// notes are read (public only unless --max-sensitivity or --allow says
/// otherwise); the report never authorizes execution.
///
/// Exit codes: 0 compiled, 3 refused (budget_too_small or, for hybrid,
/// scope_too_large as a compiled JSON object), 2 usage or configuration
/// error, 5 the vault cannot be read.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Explicit targets: note ids (D-001), evidence ids (E-001) or note
    /// paths relative to the vault; at most 64.
    #[arg(value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Also select permitted records matching this query (decisions only
    /// when they are current premises).
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
    /// The ranker: `substring`, `bm25` or `hybrid` (BM25 plus typed-graph
    /// proximity over the permitted records' stated relations).
    #[arg(long, value_name = "RANKER", default_value = "substring")]
    pub ranking: String,
    /// At most this many contexts (1 to 64).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_docs: usize,
    /// The whole report's byte budget, newline included (160 to 4194304).
    #[arg(long, value_name = "BYTES", default_value_t = 32768)]
    pub max_bytes: usize,
    /// The agent the context is compiled for (recorded in the recipe).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    #[command(flatten)]
    pub vault: VaultArgs,
    /// Regenerate every `[[compile]]` artifact kapi.toml declares.
    #[arg(long, conflicts_with_all = ["targets", "query", "root", "max_sensitivity", "allow", "agent"])]
    pub all: bool,
    /// Accepted for compatibility: the output is always JSON.
    #[arg(long, hide = true)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    let request = args.vault.request(&ctx.cwd);
    let resolved = request.resolve(|| ctx.env.now_ms())?;
    if args.all {
        return compile_all(&resolved);
    }
    let ranking = Ranking::requested(&args.ranking).map_err(RequestError::from)?;
    let vault = request.vault(&resolved)?;
    let query = args.query.filter(|q| !q.trim().is_empty());
    let options = Options {
        recipe: Recipe {
            targets: args.targets,
            query,
            ranking,
            max_docs: args.max_docs,
            max_bytes: args.max_bytes,
            agent: args.agent,
        },
        today: resolved.today,
        grant: vault.grant,
        scope: Default::default(),
        layout: vault.layout,
    };
    let compiled = compile::compile_context(&vault.root, &options)
        .map_err(|e| compile_error(e, &vault.root))?;
    let mut out = Out::new();
    out.raw(&compile::serialize_compiled(&compiled))?;
    out.flush()?;
    Ok(if compiled.refused() {
        Exit::Refused
    } else {
        Exit::Ok
    })
}

fn compile_all(resolved: &Resolved) -> Result<Exit, CliError> {
    let mut out = Out::new();
    let mut exit = Exit::Ok;
    let Resolved {
        project,
        config,
        today,
    } = resolved;
    for done in artifacts::compile_declared(project, config, *today)? {
        match done? {
            ArtifactCompiled::Refused { output, error } => {
                out.line(format!(
                    "refused {}: {error} (not written)",
                    output.display()
                ))?;
                exit = Exit::Refused;
            }
            ArtifactCompiled::Compiled { output, bytes } => {
                out.line(format!("compiled {} ({bytes} bytes)", output.display()))?
            }
        }
    }
    out.flush()?;
    Ok(exit)
}
