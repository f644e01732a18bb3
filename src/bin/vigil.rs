use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    vigil::lambda::init_tracing();
    match vigil::cli::run(vigil::cli::Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
