//! The back-off, the retry loop and the outage report on a fake clock: no test here sleeps.

use std::cell::Cell;
use std::sync::Mutex;

use super::*;

/// Virtual time: `sleep` moves it on at once; every sleep is remembered.
#[derive(Default)]
struct FakeClock {
    now: Mutex<f64>,
    sleeps: Mutex<Vec<f64>>,
}

impl Clock for FakeClock {
    fn now(&self) -> f64 {
        *self.now.lock().unwrap()
    }
    fn sleep(&self, d: Duration) {
        self.sleeps.lock().unwrap().push(d.as_secs_f64());
        *self.now.lock().unwrap() += d.as_secs_f64();
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn backoff_doubles_to_its_cap_and_resets() {
    let mut b = Backoff::new(0.5, 8.0);
    let mut waits = Vec::new();
    for _ in 0..7 {
        waits.push(b.wait());
        b.failed();
    }
    assert_eq!(waits, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
    b.reset();
    assert_eq!(b.wait(), 0.5);
    // A first wait above the cap is the cap.
    assert_eq!(Backoff::new(0.1, 0.05).wait(), 0.05);
}

#[test]
fn sleep_until_sleeps_in_slices_and_sees_the_stop_flag() {
    let clock = FakeClock::default();
    assert!(sleep_until(&clock, || false, 0.12));
    assert!(close(clock.now(), 0.12));
    let sleeps = clock.sleeps.lock().unwrap().clone();
    assert!(
        sleeps
            .iter()
            .all(|&s| s <= POLL_SLICE.as_secs_f64() + 1e-12)
    );
    let clock = FakeClock::default();
    assert!(!sleep_until(&clock, || clock.now() >= 0.1, 10.0));
    assert!(clock.now() <= 0.1 + POLL_SLICE.as_secs_f64() + 1e-9);
}

#[test]
fn retry_waits_doubling_until_an_attempt_succeeds() {
    let clock = FakeClock::default();
    let times = Mutex::new(Vec::new());
    let (result, attempts) = retry(
        &clock,
        || false,
        Backoff::new(0.5, 8.0),
        None,
        15.0,
        |budget| {
            assert_eq!(budget, 15.0);
            times.lock().unwrap().push(clock.now());
            if times.lock().unwrap().len() < 4 {
                Err(())
            } else {
                Ok("back")
            }
        },
    );
    assert!(matches!(result, Retried::Back("back")));
    assert_eq!(attempts, 4);
    // Waits 0.5, 1, 2, 4 before the attempts.
    let times = times.into_inner().unwrap();
    for (t, want) in times.iter().zip([0.5, 1.5, 3.5, 7.5]) {
        assert!(close(*t, want), "{times:?}");
    }
}

#[test]
fn retry_gives_up_at_the_end_of_its_window_and_cuts_the_last_budget() {
    let clock = FakeClock::default();
    let budgets = Mutex::new(Vec::new());
    let (result, attempts) = retry(
        &clock,
        || false,
        Backoff::new(0.5, 8.0),
        Some(3.0),
        15.0,
        |budget| {
            budgets.lock().unwrap().push((clock.now(), budget));
            // Each failed attempt takes its whole budget.
            clock.sleep(Duration::from_secs_f64(budget.min(1.0)));
            Err::<(), ()>(())
        },
    );
    assert!(matches!(result, Retried::GaveUp));
    let budgets = budgets.into_inner().unwrap();
    assert_eq!(attempts, budgets.len() as u64);
    // At 0.5 (2.5 s left), then 0.5 + 1 + 1 = 2.5 (0.5 s left), then the window's end (3.0,
    // an attempt that still gets 0.1 s).
    let want = [(0.5, 2.5), (2.5, 0.5), (3.0, 0.1)];
    assert_eq!(budgets.len(), want.len(), "{budgets:?}");
    for ((t, b), (wt, wb)) in budgets.iter().zip(want) {
        assert!(close(*t, wt) && close(*b, wb), "{budgets:?}");
    }
    // A zero window gives up before any attempt.
    let (result, attempts) = retry(
        &clock,
        || false,
        Backoff::new(0.5, 8.0),
        Some(0.0),
        15.0,
        |_| Ok::<(), ()>(()),
    );
    assert!(matches!(result, Retried::GaveUp) && attempts == 0);
}

#[test]
fn retry_stops_when_the_flag_rises_during_a_wait_or_an_attempt() {
    let clock = FakeClock::default();
    let (result, attempts) = retry(
        &clock,
        || clock.now() >= 1.0,
        Backoff::new(0.5, 8.0),
        None,
        15.0,
        |_| Err::<(), ()>(()),
    );
    // Tried at 0.5, then stopped at 1.0 while waiting 1 s for the next attempt.
    assert!(matches!(result, Retried::Stopped) && attempts == 1);
    assert!(close(clock.now(), 1.0));
    let stop = Cell::new(false);
    let (result, attempts) = retry(
        &clock,
        || stop.get(),
        Backoff::new(0.5, 8.0),
        None,
        15.0,
        |_| {
            stop.set(true);
            Err::<(), ()>(())
        },
    );
    assert!(matches!(result, Retried::Stopped) && attempts == 1);
}

#[test]
fn outages_report_one_shape_with_an_ongoing_one_last() {
    let mut outages = Outages::default();
    let mut first = Ongoing::new(10.25, "no data for 10.0 s");
    first.attempts = 3;
    outages.push(first.end(0.25, 12.0004, true));
    outages.reconnected();
    let ongoing = Ongoing::new(20.0, "capture failed (No such device)").end(0.25, 21.5, false);
    let mut map = serde_json::Map::new();
    outages.report_into(&mut map, Some(ongoing));
    assert_eq!(
        serde_json::Value::Object(map).to_string(),
        r#"{"reconnects":1,"outage_count":2,"outage_s":3.25,"outages":[{"at_s":10.0,"duration_s":1.75,"attempts":3,"error":"no data for 10.0 s","recovered":true},{"at_s":19.75,"duration_s":1.5,"attempts":0,"error":"capture failed (No such device)","recovered":false}]}"#
    );
    // The ongoing outage is not kept: asked again later, it is reported anew.
    let mut map = serde_json::Map::new();
    outages.report_into(&mut map, None);
    assert_eq!(map["outage_count"], 1);
}

#[test]
fn only_the_first_outages_are_listed_but_all_are_counted() {
    let mut outages = Outages::default();
    for i in 0..MAX_OUTAGES_LISTED + 5 {
        outages.push(Ongoing::new(i as f64, "gone").end(0.0, i as f64 + 0.5, true));
    }
    let mut map = serde_json::Map::new();
    outages.report_into(&mut map, None);
    assert_eq!(map["outage_count"], MAX_OUTAGES_LISTED as u64 + 5);
    assert_eq!(map["outages"].as_array().unwrap().len(), MAX_OUTAGES_LISTED);
    assert_eq!(map["outage_s"], 52.5);
}
