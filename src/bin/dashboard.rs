//! Lambda function serving the dashboard page; all setup lives in the shared bootstrap.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_dashboard().await
}
