//! Webhook dispatch, triggered by the table's DynamoDB stream.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_webhook_dispatch().await
}
