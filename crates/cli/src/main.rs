//! The `redline` command.

fn main() {
    eprintln!("redline: subcommands arrive with the CLI issue");
    std::process::exit(1);
}
