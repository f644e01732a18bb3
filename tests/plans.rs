//! Plans and usage, through every door: the handlers through their Lambda events, and black-box
//! against `vigil serve` with seeded plans that make each limit reachable (403, 429 with
//! `Retry-After`, the rate-limit headers).

mod common;

mod lambda {
    //! The handlers through the Lambda events `get-plan.json` and `get-usage.json`.

    use crate::common::lambda::*;
    use http::StatusCode;
    use serde_json::json;
    use vigil_http::handlers;

    #[tokio::test]
    async fn get_plan_returns_all_ten_fields() {
        let f = fixture().await;
        let a = call::<handlers::GetPlan>(&f.app, request("get-plan.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(
            a.body,
            json!({ "data": {
                "id": "plan_trial",
                "name": "Trial",
                "description": "14-day trial",
                "maxRps": 1000,
                "maxProjects": 3,
                "maxRequests": 100000,
                "expiresAt": "2099-12-05T00:00:00.000Z",
                "subscribedAt": "2026-11-21T00:00:00.000Z",
                "status": "trialing",
                "unsubscribedAt": null
            }})
        );
    }

    #[tokio::test]
    async fn get_usage_counts_the_period() {
        let f = fixture().await;
        let a = call::<handlers::GetUsage>(&f.app, request("get-usage.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        let d = &a.body["data"];
        // This request is the first of the period.
        assert_eq!(
            (d["requests"].as_u64(), d["remaining"].as_u64()),
            (Some(1), Some(99_999))
        );
        assert_eq!(d["maxRequests"], 100_000);
        assert!(d["periodStart"].as_str().unwrap() < d["periodEnd"].as_str().unwrap());
    }
}

mod black_box {
    //! Black-box against `vigil serve`.

    use crate::common;
    use common::api::*;
    use common::api::{Resp, Server};
    use common::plans::*;
    use serde_json::json;

    #[tokio::test]
    async fn plan_shows_all_ten_fields_of_the_keys_account() {
        let srv = Server::seeded(&fixture(vec![]));
        for (key, plan) in [(KEY1, plan1()), (KEY1B, plan1()), (KEY2, plan2())] {
            srv.get(key, "/v1/plan")
                .await
                .expect(200, json!({ "data": plan }));
        }
    }

    #[tokio::test]
    async fn over_max_rps_is_429_with_retry_after_and_every_answer_has_the_headers() {
        let srv = start(plan("active", 3, 1_000_000, 5));
        // Twelve requests at once: at most three per second get through (six if they straddle two).
        let answers =
            futures_util::future::join_all((0..12).map(|_| srv.get(KEY, "/v1/projects/prj_1")))
                .await;
        let ok: Vec<&Resp> = answers.iter().filter(|a| a.status == 200).collect();
        let limited: Vec<&Resp> = answers.iter().filter(|a| a.status == 429).collect();
        assert_eq!(ok.len() + limited.len(), 12);
        assert!((1..=6).contains(&ok.len()), "{} allowed", ok.len());
        let a = limited
            .first()
            .expect("a burst of 12 against maxRps 3 is refused");
        assert_eq!(a.message(), "Rate limit exceeded");
        assert_eq!(a.header_value("retry-after"), "1");
        assert!(a.header_value("ratelimit").contains("\"burst\";r=0;t=1"));
        for a in &answers {
            let policy = a.header_value("ratelimit-policy");
            assert!(
                policy.starts_with("\"burst\";q=3;w=1, \"monthly\";q=1000000;w="),
                "{policy}"
            );
        }
        for a in ok {
            let remaining = a.header_value("ratelimit");
            assert!(remaining.starts_with("\"burst\";r="), "{remaining}");
            assert!(remaining.contains(", \"monthly\";r="), "{remaining}");
        }
    }

    #[tokio::test]
    async fn over_max_requests_is_429_until_the_next_period() {
        let srv = start(plan("active", 1000, 3, 5));
        let usage = srv.get(KEY, "/v1/usage").await;
        assert_eq!(usage.status, 200);
        let data = &usage.json()["data"];
        assert_eq!(data["requests"], 1);
        assert_eq!(data["maxRequests"], 3);
        assert_eq!(data["remaining"], 2);
        // Anniversaries of a plan subscribed on January 31st fall on the last day of short months.
        let (start, end) = (
            data["periodStart"].as_str().unwrap(),
            data["periodEnd"].as_str().unwrap(),
        );
        assert!(
            start.ends_with("T00:00:00.000Z") && end.ends_with("T00:00:00.000Z"),
            "{start} {end}"
        );
        // A 404 counts: it passed authentication and no limit refused it.
        assert_eq!(srv.get(KEY, "/v1/projects/prj_missing").await.status, 404);
        let last = srv.get(KEY, "/v1/plan").await;
        assert_eq!(last.status, 200);
        assert!(
            last.header_value("ratelimit")
                .contains("\"monthly\";r=0;t="),
            "{}",
            last.header_value("ratelimit")
        );
        let refused = srv.get(KEY, "/v1/plan").await;
        assert_eq!(refused.status, 429);
        assert_eq!(refused.message(), "Monthly request quota exceeded");
        let retry: u64 = refused.header_value("retry-after").parse().unwrap();
        assert!((1..=31 * 86_400).contains(&retry), "{retry}");
        // Another account is not affected.
        let other = srv.get(OTHER, "/v1/plan").await;
        assert_eq!(other.status, 200);
    }

    #[tokio::test]
    async fn a_plan_not_in_force_refuses_everything_but_reading_the_plan() {
        for status in ["canceled", "unpaid", "paused"] {
            let srv = start(plan(status, 1000, 1000, 5));
            let a = srv.get(KEY, "/v1/projects/prj_1").await;
            assert_eq!(
                (a.status, a.message().as_str()),
                (403, "Plan is not active")
            );
            assert!(a.header("ratelimit-policy").is_some());
            let a = create(&srv, "N", "n.example").await;
            assert_eq!(a.status, 403, "{status}");
            let read = srv.get(KEY, "/v1/plan").await;
            assert_eq!(read.status, 200, "{status}");
            assert_eq!(read.json()["data"]["status"], status);
        }
        // Expired: in force by status, but past expiresAt.
        let mut expired = plan("active", 1000, 1000, 5);
        expired["expiresAt"] = json!("2026-01-01T00:00:00.000Z");
        let srv = start(expired);
        assert_eq!(
            srv.get(KEY, "/v1/usage").await.message(),
            "Plan is not active"
        );
        assert_eq!(srv.get(KEY, "/v1/plan").await.status, 200);
        // past_due is a grace period: in force.
        let srv = start(plan("past_due", 1000, 1000, 5));
        assert_eq!(srv.get(KEY, "/v1/projects/prj_1").await.status, 200);
    }

    #[tokio::test]
    async fn two_server_processes_on_one_database_share_the_per_second_limit() {
        let first = start(plan("active", 5, 1_000_000, 5));
        // A second process on the same SQLite file: the counters are in the file, not the process.
        let second = Server::start(&first.db, None);
        let burst = (0..30).map(|i| {
            let srv = if i % 2 == 0 { &first } else { &second };
            srv.get(KEY, "/v1/plan")
        });
        let answers = futures_util::future::join_all(burst).await;
        // Each admitted answer says how many requests its second had left: `r = 5 - counted`. Per
        // second, the counted positions 1..=5 are each taken once, so over a burst that spans at
        // most two seconds no position appears more than twice, and none is beyond the limit.
        let mut taken = [0usize; 6];
        for a in answers.iter().filter(|a| a.status == 200) {
            let rate = a.header_value("ratelimit");
            let r: usize = rate
                .trim_start_matches("\"burst\";r=")
                .split(';')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{rate}"));
            assert!(r < 5, "{rate}");
            taken[5 - r] += 1;
        }
        let allowed: usize = taken.iter().sum();
        assert!((5..=10).contains(&allowed), "{allowed} allowed: {taken:?}");
        assert!(
            taken[1..].iter().all(|&n| (1..=2).contains(&n)),
            "{taken:?}"
        );
        assert_eq!(
            answers.iter().filter(|a| a.status == 429).count(),
            30 - allowed
        );
    }
}
