//! The API Gateway TOKEN authorizer.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_authorizer().await
}
