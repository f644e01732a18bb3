//! Lambda function for one route; all setup lives in the shared bootstrap.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_http_detecting::<vigil_http::ingest::CreateEvent>().await
}
