//! Weekly calibration of every project with labels enough, invoked on a schedule.
#[tokio::main]
async fn main() -> Result<(), vigil::lambda::Error> {
    vigil::lambda::run_calibrate().await
}
