//! The retry sweep of pending webhook deliveries, invoked on a schedule.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_sweep().await
}
