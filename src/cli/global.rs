//! The flags every command takes (`--color`, `-q`, `-v`), as cargo and git
//! users expect them, and what they resolve to for this process: whether
//! stdout and stderr get colour, and how much is said besides the answer.

use std::sync::OnceLock;

/// Flags that hold for every command, before or after its name.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// When to colour: auto (a terminal, unless NO_COLOR is set or TERM is
    /// dumb; CLICOLOR_FORCE: a pipe too), always, never
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,

    /// Print only the answer: no notes, hints or progress (check: only
    /// failing findings)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Say more on stderr (check: rules, sources, timings; sync: refs
    /// moved); -vv: more still
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorArg {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorArg {
    /// The same choice, for clap's help and usage errors.
    pub fn for_clap(self) -> clap::ColorChoice {
        match self {
            ColorArg::Auto => clap::ColorChoice::Auto,
            ColorArg::Always => clap::ColorChoice::Always,
            ColorArg::Never => clap::ColorChoice::Never,
        }
    }

    /// Whether `stream` gets colour. `auto` decides as clap decides for its
    /// help (anstream, so the whole command line agrees): never when
    /// `NO_COLOR` is set and not empty (no-color.org), always when
    /// `CLICOLOR_FORCE` is (bixense.com/clicolors), never when `CLICOLOR`
    /// is `0`; else only on a terminal whose `TERM` is set and not `dumb`
    /// (or in CI).
    fn styles<S: anstream::stream::RawStream>(self, stream: &S) -> bool {
        match self {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto => anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never,
        }
    }
}

/// What the global flags mean for this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// Standard output gets colour.
    pub stdout_styled: bool,
    /// Standard error gets colour.
    pub stderr_styled: bool,
    /// `-q`: only the answer.
    pub quiet: bool,
    /// `-v`, `-vv`: how much more to say.
    pub verbose: u8,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

impl Settings {
    /// Resolve the flags against the streams and the environment.
    pub fn of(args: &GlobalArgs) -> Self {
        Self {
            stdout_styled: args.color.styles(&std::io::stdout()),
            stderr_styled: args.color.styles(&std::io::stderr()),
            quiet: args.quiet,
            verbose: if args.quiet { 0 } else { args.verbose },
        }
    }

    /// Hold these for the rest of the process (the first call wins).
    pub fn install(self) -> Self {
        *SETTINGS.get_or_init(|| self)
    }

    /// The settings installed, or plain and unstyled when none were (a
    /// test, or output before the arguments are read).
    pub fn get() -> Self {
        SETTINGS.get().copied().unwrap_or_default()
    }
}

/// `--color` read ahead of the real parse, so that help and a usage error
/// are coloured (or not) as asked: the same parser, told to ignore errors
/// and with its help and version flags off (they would end the parse), so
/// `kapi --color never check --bogus` and `kapi check --help --color
/// never` are read as a person means them. Auto when it cannot be read.
pub fn early_color(cmd: clap::Command, args: &[std::ffi::OsString]) -> ColorArg {
    // Help and version asked for are read as plain flags here, so the
    // parse goes on past them to a --color after them.
    fn bare(cmd: clap::Command) -> clap::Command {
        let flag = |id: &'static str, short: char, long: &'static str| {
            clap::Arg::new(id)
                .short(short)
                .long(long)
                .action(clap::ArgAction::SetTrue)
        };
        cmd.disable_help_flag(true)
            .disable_version_flag(true)
            .disable_help_subcommand(true)
            .arg(flag("early-help", 'h', "help"))
            .arg(flag("early-version", 'V', "version"))
            .mut_subcommands(bare)
    }
    bare(cmd)
        .ignore_errors(true)
        .try_get_matches_from(args)
        .ok()
        .and_then(|m| m.try_get_one::<ColorArg>("color").ok().flatten().copied())
        .unwrap_or_default()
}

/// `label` (`error`, `warning`, `hint`) in the style cargo and rustc give
/// it, when `styled`.
pub fn label(label: &str, styled: bool) -> String {
    if !styled {
        return label.to_owned();
    }
    let colour = match label {
        "error" => anstyle::AnsiColor::BrightRed,
        "warning" => anstyle::AnsiColor::BrightYellow,
        _ => anstyle::AnsiColor::BrightCyan,
    };
    let style = anstyle::Style::new().bold().fg_color(Some(colour.into()));
    format!("{style}{label}{style:#}")
}

/// A line kapi wrote for people, its leading `error:`, `warning:` or
/// `hint:` in colour when `styled` (the rest as it is: it was escaped
/// already, and a label is kapi's own word, never a value).
pub fn paint_line(line: &str, styled: bool) -> std::borrow::Cow<'_, str> {
    if styled {
        for name in ["error", "warning", "hint"] {
            if let Some(rest) = line.strip_prefix(name).filter(|r| r.starts_with(':')) {
                return format!("{}{rest}", label(name, true)).into();
            }
        }
    }
    line.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_label_is_painted() {
        assert_eq!(paint_line("error: x", false), "error: x");
        assert_eq!(
            paint_line("warning: x: error: y", true),
            "\u{1b}[1m\u{1b}[93mwarning\u{1b}[0m: x: error: y"
        );
        assert_eq!(paint_line("errors: x", true), "errors: x");
        assert_eq!(paint_line("exported 3", true), "exported 3");
    }
}
