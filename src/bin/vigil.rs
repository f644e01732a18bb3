use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

/// The server's requests hand their writes to one thread and get their answers back: memory
/// allocated on one thread and freed on another, which glibc's allocator serialises on its arena
/// locks (a sixth of the server's samples under ingestion, docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match vigil::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            e.exit()
        }
        Err(e) => {
            // One line: clap's first, without its usage block and hints.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("{}", first.trim());
            return ExitCode::from(2);
        }
    };
    vigil::lambda::init_tracing();
    match vigil::cli::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", vigil_core::report::Chain(&e));
            ExitCode::FAILURE
        }
    }
}
