//! The interactive loop: line editing and history (rustyline), redis-cli's quoting
//! rules, `quit`/`exit`, and `N COMMAND` to repeat a command N times.

use std::process::ExitCode;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use super::session::Session;
use super::{execute, history, Flow, Output};

/// Runs the REPL until `quit`, `exit`, Ctrl-C or Ctrl-D.
pub(crate) async fn run(mut session: Session, output: Output) -> ExitCode {
    let mut editor = match DefaultEditor::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("Could not start the line editor: {e}");
            return ExitCode::from(1);
        }
    };
    let history_file = history::path();
    if let Some(file) = &history_file {
        // A missing file is the first run, not an error.
        let _ = editor.load_history(file);
    }
    loop {
        let line = match editor.readline(&session.prompt()) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        };
        let Some(mut argv) = redline_resp::split_args(line.as_bytes()) else {
            println!("Invalid argument(s)");
            continue;
        };
        if argv.is_empty() {
            continue;
        }
        if !history::is_sensitive(&argv) {
            let _ = editor.add_history_entry(line.as_str());
            if let Some(file) = &history_file {
                // Saved after every line, as redis-cli does: a killed shell loses nothing.
                let _ = editor.save_history(file);
            }
        }
        let first = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        if first == "quit" || first == "exit" {
            return ExitCode::SUCCESS;
        }
        if first == "clear" {
            let _ = editor.clear_screen();
            continue;
        }
        // redis-cli: a leading number repeats the command that follows.
        let mut repeat = 1u64;
        if argv.len() > 1 {
            if let Ok(n) = first.parse::<u64>() {
                repeat = n;
                argv.remove(0);
            }
        }
        for _ in 0..repeat {
            match execute(&mut session, argv.clone(), output).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Stop) => return ExitCode::SUCCESS,
                Err(e) => {
                    // The dedicated connection reconnects on the next command.
                    println!("{e}");
                    break;
                }
            }
        }
    }
}
