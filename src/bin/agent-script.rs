//! Lambda function serving the browser agent script; all setup lives in the shared bootstrap.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_agent_script().await
}
