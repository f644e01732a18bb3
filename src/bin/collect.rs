//! Lambda function for the browser's visits; all setup lives in the shared bootstrap.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_collect().await
}
