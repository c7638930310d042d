//! The `redline-server` binary.

fn main() {
    eprintln!("redline-server: not built yet");
    std::process::exit(1);
}
