//! The source thread and admission: frames are read, numbered, offered to the background pool and
//! handed to the workers — those a sharded or resumed run evaluates ([`super::Selection`]); the
//! others keep their numbers (the collector is told they pass) and are read only for the pool.
//!
//! An offline source waits for room (back-pressure: nothing is dropped, up to `[pipeline] queue`
//! frames read ahead). A live source never waits: its hand-over holds one frame, and a new frame
//! that finds it occupied is dealt with by [`DropPolicy`] — `oldest` (default) drops the waiting
//! frame so the newest waits, `newest` drops the new one, `never` waits as an offline source does.
//! Because workers take a new frame only when every task of the earlier frames has been started
//! (`work.rs`), a frame waits at most about one frame's plan time, whatever the plan: a slow plan
//! drops frames here, at the source, instead of queueing minutes of stale work.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};

use super::{DropPolicy, Message, Selection, Shared};
use crate::frame::Frame;
use crate::scenario::{BackgroundPool, PoolView};
use crate::source::{LostCauses, Source, SourceError, SourceErrorKind};

/// How often a source waiting for room in the hand-over looks for a fatal error.
const HALT_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// A frame handed to the workers, with the background pool as it was before the frame joined it.
pub(super) struct Admitted {
    pub(crate) frame: Frame,
    pub(crate) pool: Option<Arc<PoolView>>,
}

/// The hand-over from the source thread to the workers.
pub(super) struct Admission {
    pub(crate) tx: Sender<Admitted>,
    /// The workers' end, to take the waiting frame back when a newer one replaces it.
    pub(crate) rx: Receiver<Admitted>,
    /// `Never` for offline sources.
    pub(crate) policy: DropPolicy,
    pub(crate) msg: Sender<Message>,
}

/// What the source thread reports at its end.
#[derive(Default)]
pub(super) struct SourceEnd {
    pub(crate) read: u64,
    pub(crate) hit_limit: bool,
    pub(crate) lost: u64,
    /// `lost` by cause, cumulative ([`Source::lost_causes`]).
    pub(crate) lost_causes: LostCauses,
    pub(crate) report: Option<serde_json::Value>,
    /// The source ended on its own in a way that fails the run ([`Source::end_error`], or no item
    /// at all): the one-line reason.
    pub(crate) error: Option<String>,
}

impl Admission {
    /// Hands `item` over by the policy; `false` when the workers are gone.
    fn hand_over(&self, mut item: Admitted, shared: &Shared) -> bool {
        shared.unprepared.fetch_add(1, Ordering::SeqCst);
        let dropped = |seq| self.msg.send(Message::Dropped { seq }).is_ok();
        match self.policy {
            // Wait for room, but not past a fatal error: the workers stop then and nothing takes
            // the frame (the channel stays open, `rx` being held here), so a plain `send` on a
            // full channel would wait for ever (a failed records write used to hang the run).
            // A stop (Ctrl-C) still waits: the workers finish the frames read ahead.
            DropPolicy::Never => loop {
                match self.tx.send_timeout(item, HALT_POLL) {
                    Ok(()) => return true,
                    Err(SendTimeoutError::Timeout(back))
                        if !shared.fatal.load(Ordering::Relaxed) =>
                    {
                        item = back;
                    }
                    Err(_) => {
                        shared.unprepared.fetch_sub(1, Ordering::SeqCst);
                        return false;
                    }
                }
            },
            DropPolicy::Newest => match self.tx.try_send(item) {
                Ok(()) => true,
                Err(TrySendError::Full(back)) => {
                    shared.unprepared.fetch_sub(1, Ordering::SeqCst);
                    dropped(back.frame.seq)
                }
                Err(TrySendError::Disconnected(_)) => false,
            },
            DropPolicy::Oldest => loop {
                match self.tx.try_send(item) {
                    Ok(()) => return true,
                    Err(TrySendError::Disconnected(_)) => return false,
                    Err(TrySendError::Full(back)) => {
                        // Take the waiting frame back (a worker may have taken it meanwhile:
                        // then there is room now) and try again.
                        if let Ok(old) = self.rx.try_recv() {
                            shared.unprepared.fetch_sub(1, Ordering::SeqCst);
                            if !dropped(old.frame.seq) {
                                return false;
                            }
                        }
                        item = back;
                    }
                }
            },
        }
    }
}

/// Reads `source` to its end, the limit, the stop flag or a fatal error, handing every frame over
/// that `select` evaluates (all of them without a selection). Items it does not evaluate keep
/// their positions: the source passes over them unread where it can ([`Source::pass_over`]), else
/// they are read, offered to the pool when the selection reads them for it, and let go.
pub(super) fn read(
    source: &mut dyn Source,
    mut pool: Option<BackgroundPool>,
    limit: Option<u64>,
    select: Option<&Selection>,
    admission: &Admission,
    shared: &Shared,
) -> SourceEnd {
    let mut end = SourceEnd::default();
    let mut seq = 0u64;
    let mut exhausted = false;
    let reads = select.map(|s| s.filter(pool.is_some()));
    while !shared.halted() {
        if limit.is_some_and(|l| seq >= l) {
            end.hit_limit = true;
            break;
        }
        if let Some(reads) = &reads {
            let max = limit.map_or(u64::MAX, |l| l - seq);
            let passed = source.pass_over(reads, max);
            if passed > 0 {
                if admission
                    .msg
                    .send(Message::Passed { seq, n: passed })
                    .is_err()
                {
                    break;
                }
                seq += passed;
                continue;
            }
        }
        let Some(item) = source.next_frame() else {
            exhausted = true;
            break;
        };
        let lost_now = source.lost();
        if lost_now > end.lost {
            end.lost_causes = source.lost_causes();
            let msg = Message::Lost(lost_now - end.lost, end.lost_causes.clone());
            end.lost = lost_now;
            if admission.msg.send(msg).is_err() {
                break;
            }
        }
        let handed = match item {
            Ok(frame) if select.is_some_and(|s| !s.evaluates(&frame.id)) => {
                // Read for the pool only (another shard's frame, or a finished one).
                if let Some(p) = pool.as_mut() {
                    p.offer(&frame);
                }
                admission.msg.send(Message::Passed { seq, n: 1 }).is_ok()
            }
            Err(e) if select.is_some_and(|s| !s.counts_error(&e, seq)) => {
                admission.msg.send(Message::Passed { seq, n: 1 }).is_ok()
            }
            Ok(mut frame) => {
                frame.seq = seq;
                end.read += 1;
                // This frame sees the pool of the frames before it, then joins it.
                let view = pool.as_mut().map(|p| {
                    let view = p.view();
                    p.offer(&frame);
                    view
                });
                admission.hand_over(Admitted { frame, pool: view }, shared)
            }
            Err(e) => admission
                .msg
                .send(Message::Skipped {
                    seq,
                    reason: e.to_string(),
                })
                .is_ok(),
        };
        if !handed {
            break;
        }
        seq += 1;
    }
    if exhausted && !shared.halted() {
        // The end of the input, unless the source says otherwise, or it gave nothing at all (an
        // item source fails at open when empty; this catches every other kind).
        end.error = source
            .end_error()
            .or_else(|| {
                (seq == 0).then(|| {
                    SourceError::new(
                        SourceErrorKind::Empty,
                        source.describe(),
                        "the source ended without giving a single frame; check that it holds \
                         images or frames",
                    )
                })
            })
            .map(|e| e.to_string());
    }
    shared.source_done.store(true, Ordering::Relaxed);
    end.report = source.report();
    end
}
