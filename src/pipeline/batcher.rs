//! Dynamic batching: take the first queued variant, then keep taking until the batch is full or the
//! wait budget since the first one is spent.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

/// Collects up to `max` items from `rx` into `batch` (cleared first): blocks for the first item, then
/// waits at most `max_wait` for the rest. Returns `false` when the channel is closed and empty (no more
/// batches).
pub fn next_batch<T>(rx: &Receiver<T>, max: usize, max_wait: Duration, batch: &mut Vec<T>) -> bool {
    batch.clear();
    match rx.recv() {
        Ok(item) => batch.push(item),
        Err(_) => return false,
    }
    let deadline = Instant::now() + max_wait;
    while batch.len() < max {
        // Take whatever is already queued without waiting.
        match rx.try_recv() {
            Ok(item) => {
                batch.push(item);
                continue;
            }
            Err(crossbeam_channel::TryRecvError::Disconnected) => break,
            Err(crossbeam_channel::TryRecvError::Empty) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        match rx.recv_timeout(deadline - now) {
            Ok(item) => batch.push(item),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_to_max_then_returns_the_rest() {
        let (tx, rx) = crossbeam_channel::unbounded();
        for i in 0..5 {
            tx.send(i).unwrap();
        }
        drop(tx);
        let mut b = Vec::new();
        assert!(next_batch(&rx, 3, Duration::from_millis(50), &mut b));
        assert_eq!(b, vec![0, 1, 2]);
        assert!(next_batch(&rx, 3, Duration::from_millis(50), &mut b));
        assert_eq!(b, vec![3, 4]);
        assert!(!next_batch(&rx, 3, Duration::from_millis(50), &mut b));
    }

    #[test]
    fn a_partial_batch_leaves_after_the_wait() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(1).unwrap();
        let mut b = Vec::new();
        let t = Instant::now();
        assert!(next_batch(&rx, 8, Duration::from_millis(20), &mut b));
        assert_eq!(b, vec![1]);
        assert!(t.elapsed() >= Duration::from_millis(20));
        drop(tx);
    }
}
