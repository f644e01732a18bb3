//! Lambda function serving the API reference (page, renderer, openapi.yaml); all setup lives in
//! the shared bootstrap.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_reference().await
}
