//! `redline cli`: redis-cli's one-shot mode, interactive REPL and pipe mode.
//!
//! - `redline cli [flags] CMD ARGS...` runs one command and prints its reply the way
//!   redis-cli does: the terminal form on a terminal, the raw form otherwise (`--raw` /
//!   `--no-raw` force one). Exit code 1 when the server cannot be reached; an error reply
//!   still exits 0, as redis-cli 7.0 does.
//! - Without a command, on a terminal: a REPL ([`repl`]) with history.
//! - Without a command, from a pipe: one command per input line, split with redis-cli's
//!   quoting rules.

mod format;
mod history;
mod listen;
mod repl;
mod session;

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;

use crate::conn::ConnArgs;
use session::Session;

/// Flags of `redline cli`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct CliArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
    /// Database number.
    #[arg(short = 'n', value_name = "DB")]
    pub(crate) db: Option<u32>,
    /// Enable cluster mode (follow -ASK and -MOVED redirections).
    #[arg(short = 'c')]
    pub(crate) cluster: bool,
    /// Use raw formatting for replies (default when STDOUT is not a tty).
    #[arg(long = "raw")]
    pub(crate) raw: bool,
    /// Force formatted output even when STDOUT is not a tty.
    #[arg(long = "no-raw")]
    pub(crate) no_raw: bool,
    /// Execute specified command N times (-1: forever).
    #[arg(short = 'r', value_name = "REPEAT", allow_negative_numbers = true)]
    pub(crate) repeat: Option<i64>,
    /// When -r is used, waits <interval> seconds per command (decimals allowed).
    #[arg(short = 'i', value_name = "INTERVAL")]
    pub(crate) interval: Option<f64>,
    /// Read last argument from STDIN.
    #[arg(short = 'x')]
    pub(crate) stdin_arg: bool,
    /// The command to run once; without it, a REPL (terminal) or one command per line (pipe).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) command: Vec<String>,
}

/// How replies are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// redis-cli's terminal form.
    Standard,
    /// redis-cli's `--raw` form.
    Raw,
}

impl Output {
    /// Renders one reply (or error) with the trailing newline redis-cli prints.
    pub(crate) fn render(self, reply: &redline::Frame) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Output::Standard => format::tty(reply, "", &mut out),
            Output::Raw => {
                format::raw(reply, &mut out);
                out.push(b'\n');
            }
        }
        out
    }
}

/// Runs `redline cli`.
pub(crate) fn run(args: CliArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Could not start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(run_async(args))
}

async fn run_async(args: CliArgs) -> ExitCode {
    let stdout_tty = std::io::stdout().is_terminal();
    let output = if args.raw || (!stdout_tty && !args.no_raw) {
        Output::Raw
    } else {
        Output::Standard
    };
    let mut session = match Session::connect(&args).await {
        Ok(session) => session,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    if !args.command.is_empty() {
        let mut argv: Vec<bytes::Bytes> = args
            .command
            .iter()
            .map(|a| bytes::Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        if args.stdin_arg {
            let mut last = Vec::new();
            if let Err(e) = std::io::Read::read_to_end(&mut std::io::stdin(), &mut last) {
                eprintln!("Error reading stdin: {e}");
                return ExitCode::from(1);
            }
            argv.push(bytes::Bytes::from(last));
        }
        return one_shot(&mut session, argv, output, &args).await;
    }
    if std::io::stdin().is_terminal() {
        return repl::run(session, output).await;
    }
    pipe(session, output).await
}

/// Runs the command line's command, `-r` times with `-i` seconds between, as redis-cli.
async fn one_shot(
    session: &mut Session,
    argv: Vec<bytes::Bytes>,
    output: Output,
    args: &CliArgs,
) -> ExitCode {
    let interval = args
        .interval
        .filter(|i| i.is_finite() && *i > 0.0)
        .map(std::time::Duration::from_secs_f64);
    let mut left = args.repeat.unwrap_or(1);
    while left != 0 {
        match execute(session, argv.clone(), output).await {
            Ok(Flow::Continue) => {}
            Ok(Flow::Stop) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        }
        if left > 0 {
            left -= 1;
        }
        if left != 0 {
            if let Some(pause) = interval {
                tokio::time::sleep(pause).await;
            }
        }
    }
    ExitCode::SUCCESS
}

/// One command per line of stdin; stops at the end of input or a lost connection.
async fn pipe(mut session: Session, output: Output) -> ExitCode {
    let stdin = std::io::stdin();
    for line in stdin.lock().split(b'\n') {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                eprintln!("Error reading stdin: {e}");
                return ExitCode::from(1);
            }
        };
        match redline_resp::split_args(&line) {
            None => {
                if print(b"Invalid argument(s)\n".to_vec()) != ExitCode::SUCCESS {
                    return ExitCode::from(1);
                }
            }
            Some(argv) if argv.is_empty() => {}
            Some(argv) => match execute(&mut session, argv, output).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Stop) => return ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(1);
                }
            },
        }
    }
    ExitCode::SUCCESS
}

/// What to do after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Read the next command.
    Continue,
    /// Exit: subscribe mode ended (Ctrl-C), or stdout is closed.
    Stop,
}

/// Runs one command and prints its reply; subscribe commands enter subscribe mode, which
/// lasts until Ctrl-C, as in redis-cli.
pub(crate) async fn execute(
    session: &mut Session,
    argv: Vec<bytes::Bytes>,
    output: Output,
) -> Result<Flow, session::SessionError> {
    if let Some(kind) = argv.first().and_then(|name| listen::Kind::of(name)) {
        if argv.len() > 1 {
            let listener = session.listener(kind).await?;
            listen::run(listener, kind, argv[1..].to_vec(), output).await?;
            return Ok(Flow::Stop);
        }
    }
    let reply = session.run(argv).await?;
    if print(output.render(&reply)) == ExitCode::SUCCESS {
        Ok(Flow::Continue)
    } else {
        Ok(Flow::Stop)
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends quietly.
fn print(bytes: Vec<u8>) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
