//! Answers unknown routes (404) and known routes with the wrong method (405).
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_fallback().await
}
