//! Batch assembly: workers write each variant's tensor straight into a row of a batch buffer, and
//! the engine thread takes whole buffers. No tensor is allocated per variant and none is copied
//! on its way to the engine (on the CPU the engine runs the buffer in place; on GPU providers the
//! buffers are the engine's pinned memory, [`crate::engine::Engine::batch_buffer`]).
//!
//! A small ring of buffers (three by default) goes round: one is filled by the workers, one waits
//! full, one is being run. A worker [`Assembler::claim`]s the next row of the open buffer, writes
//! it without holding any lock ([`Slot::values`]), and hands it back with its metadata
//! ([`Slot::fill`]). The engine thread [`Assembler::take`]s the oldest buffer once it is full, or
//! once `max_wait` has passed since its first row was claimed (the dynamic batching deadline), and
//! every claimed row is written; it hands the buffer back with [`Assembler::release`]. With every
//! buffer full or running, `claim` waits: that is the back-pressure between the workers and the
//! engine, and it bounds the work queued in front of the engine to one batch.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::engine::BatchBuffer;

/// Buffers in the ring: one filling, one full and waiting, one running.
pub(crate) const BUFFERS: usize = 3;

/// A full (or sealed) batch for the engine: the buffer and the metadata of each claimed row, in
/// row order (`None` for a row whose writer gave up; its output is ignored).
pub(crate) struct Batch<M> {
    /// The values; rows `0..rows.len()` hold the batch.
    pub(crate) buffer: BatchBuffer,
    /// Per-row metadata.
    pub(crate) rows: Vec<Option<M>>,
}

/// Where the workers' rows go. `M` is the metadata kept with each row.
pub(crate) struct Assembler<M> {
    state: Mutex<State<M>>,
    /// The engine thread waits here for a batch.
    engine: Condvar,
    /// Workers wait here for a free buffer.
    workers: Condvar,
    /// Rows of a full batch (≤ the buffers' rows; the rest is room for the engine's padding).
    rows: usize,
    max_wait: Duration,
}

struct State<M> {
    free: Vec<BatchBuffer>,
    /// The buffer rows are being claimed in.
    open: Option<Open<M>>,
    /// Full or sealed buffers, oldest first, waiting for their last rows and the engine.
    sealed: VecDeque<Open<M>>,
    /// Buffer ids, so a row's writer finds its buffer wherever it is.
    next_id: u64,
    /// No more rows will be claimed (workers finished, or an engine failure).
    closed: bool,
}

struct Open<M> {
    id: u64,
    buffer: BatchBuffer,
    /// The first value of the buffer, taken once when it was opened; rows are written through it.
    base: *mut f32,
    per: usize,
    claimed: usize,
    written: usize,
    first: Instant,
    metas: Vec<Option<M>>,
}

// SAFETY: `base` points into the heap memory `buffer` owns, which moves with it (`BatchBuffer` is
// `Send`); the pointer is only dereferenced through `Slot`s under the rules of `Slot::values`.
unsafe impl<M: Send> Send for Open<M> {}

/// One claimed row of a batch buffer, to be written by one worker and then [`Slot::fill`]ed.
/// Dropping it unfilled gives the row up (its output is ignored), so the batch is never held.
pub(crate) struct Slot<'a, M> {
    assembler: &'a Assembler<M>,
    id: u64,
    row: usize,
    ptr: *mut f32,
    len: usize,
    done: bool,
}

/// A claim that cannot be served: the assembler was closed (the run is ending or failed).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Closed;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<M> Assembler<M> {
    /// An assembler over `buffers` (each of at least `batch` rows) for batches of up to `batch`
    /// rows; a batch leaves at the latest `max_wait` after its first row was claimed.
    pub(crate) fn new(buffers: Vec<BatchBuffer>, batch: usize, max_wait: Duration) -> Self {
        let rows = batch.max(1);
        assert!(
            buffers.iter().all(|b| b.rows() >= rows),
            "batch buffers hold fewer rows than a batch"
        );
        Self {
            state: Mutex::new(State {
                free: buffers,
                open: None,
                sealed: VecDeque::new(),
                next_id: 0,
                closed: false,
            }),
            engine: Condvar::new(),
            workers: Condvar::new(),
            rows,
            max_wait,
        }
    }

    /// Claims the next row of the open buffer, opening a free one when needed and waiting while
    /// none is free. `Err(Closed)` once [`Assembler::close`] was called.
    pub(crate) fn claim(&self) -> Result<Slot<'_, M>, Closed> {
        let mut st = lock(&self.state);
        loop {
            if st.closed {
                return Err(Closed);
            }
            if st.open.is_none()
                && let Some(mut buffer) = st.free.pop()
            {
                let id = st.next_id;
                st.next_id += 1;
                let per = buffer.per();
                // The one place the buffer is borrowed while open: rows are written through this
                // pointer until the batch is taken (see `Slot::values`).
                let base = buffer.as_mut_slice().as_mut_ptr();
                st.open = Some(Open {
                    id,
                    buffer,
                    base,
                    per,
                    claimed: 0,
                    written: 0,
                    first: Instant::now(),
                    metas: Vec::with_capacity(self.rows),
                });
            }
            let Some(open) = st.open.as_mut() else {
                st = self
                    .workers
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let row = open.claimed;
            open.claimed += 1;
            open.metas.push(None);
            if row == 0 {
                open.first = Instant::now();
            }
            // SAFETY: `row < rows`, so the row lies inside the buffer's `rows × per` values.
            let ptr = unsafe { open.base.add(row * open.per) };
            let slot = Slot {
                assembler: self,
                id: open.id,
                row,
                ptr,
                len: open.per,
                done: false,
            };
            if open.claimed == self.rows {
                let full = st.open.take().expect("open");
                st.sealed.push_back(full);
            }
            // The engine learns of a first row (its deadline starts) or of a full buffer.
            self.engine.notify_one();
            return Ok(slot);
        }
    }

    fn finish(&self, id: u64, row: usize, meta: Option<M>) {
        let mut st = lock(&self.state);
        let st = &mut *st;
        let batch = st
            .open
            .iter_mut()
            .chain(st.sealed.iter_mut())
            .find(|b| b.id == id);
        if let Some(b) = batch {
            b.metas[row] = meta;
            b.written += 1;
        }
        self.engine.notify_one();
    }

    /// The next batch for the engine, oldest first: a full buffer, or the open one once its
    /// deadline has passed (or the assembler is closed), as soon as every claimed row is written.
    /// `None` when closed and nothing is left.
    pub(crate) fn take(&self) -> Option<Batch<M>> {
        let mut st = lock(&self.state);
        loop {
            if let Some(front) = st.sealed.front() {
                if front.written == front.claimed {
                    let b = st.sealed.pop_front().expect("front");
                    return Some(Batch {
                        buffer: b.buffer,
                        rows: b.metas,
                    });
                }
                // A worker is still writing its row: it is about to finish.
                st = self.engine.wait(st).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            let wait = match st.open.as_ref() {
                Some(open) if open.claimed > 0 => {
                    let deadline = open.first + self.max_wait;
                    let now = Instant::now();
                    if st.closed || now >= deadline {
                        let b = st.open.take().expect("open");
                        st.sealed.push_back(b);
                        continue;
                    }
                    Some(deadline - now)
                }
                _ if st.closed => return None,
                _ => None,
            };
            st = match wait {
                Some(d) => {
                    self.engine
                        .wait_timeout(st, d)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self.engine.wait(st).unwrap_or_else(PoisonError::into_inner),
            };
        }
    }

    /// Gives a buffer back after its batch ran.
    pub(crate) fn release(&self, buffer: BatchBuffer) {
        lock(&self.state).free.push(buffer);
        self.workers.notify_one();
    }

    /// No more claims: waiting and later claims fail with [`Closed`]; [`Assembler::take`] hands
    /// out what is left and then `None`. Called when the workers are done, or on a fatal error.
    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
        self.workers.notify_all();
        self.engine.notify_all();
    }
}

impl<M> Slot<'_, M> {
    /// The row's values, to be written in full.
    pub(crate) fn values(&mut self) -> &mut [f32] {
        // SAFETY: the row `[ptr, ptr + len)` lies inside a buffer that stays allocated and in place
        // until its batch is taken (a buffer moves between the ring's lists, its heap memory does
        // not). The row was claimed by this slot alone (`claim` hands out each row once, under the
        // lock), so no other `&mut` exists to it; nothing reads the buffer until every claimed row
        // is finished (`take` waits for `written == claimed`), and finishing takes `self` by value
        // (`fill`/drop), after the last use of this borrow. The lock taken in `finish` orders these
        // writes before the engine's reads.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Hands the written row back with its metadata.
    pub(crate) fn fill(mut self, meta: M) {
        self.done = true;
        self.assembler.finish(self.id, self.row, Some(meta));
    }
}

impl<M> Drop for Slot<'_, M> {
    fn drop(&mut self) {
        if !self.done {
            self.assembler.finish(self.id, self.row, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn assembler(buffers: usize, rows: usize, per: usize, wait_ms: u64) -> Assembler<u32> {
        Assembler::new(
            (0..buffers).map(|_| BatchBuffer::host(rows, per)).collect(),
            rows,
            Duration::from_millis(wait_ms),
        )
    }

    #[test]
    fn rows_are_written_in_place_and_leave_when_full() {
        let a = assembler(2, 3, 2, 10_000);
        for i in 0..3u32 {
            let mut s = a.claim().unwrap();
            s.values().fill(i as f32);
            s.fill(i);
        }
        let b = a.take().unwrap();
        assert_eq!(b.rows, [Some(0), Some(1), Some(2)]);
        assert_eq!(b.buffer.as_slice(), [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
        a.release(b.buffer);
        // Buffers larger than a batch (room for padding): batches still leave at `batch` rows.
        let a = Assembler::new(vec![BatchBuffer::host(4, 1)], 2, Duration::from_secs(10));
        a.claim().unwrap().fill(1u32);
        a.claim().unwrap().fill(2);
        assert_eq!(a.take().unwrap().rows, [Some(1), Some(2)]);
    }

    #[test]
    fn a_partial_batch_leaves_after_the_wait() {
        let a = assembler(2, 8, 1, 20);
        let t = Instant::now();
        a.claim().unwrap().fill(7);
        let b = a.take().unwrap();
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert_eq!(b.rows, [Some(7)]);
    }

    #[test]
    fn an_abandoned_row_does_not_hold_the_batch() {
        let a = assembler(1, 2, 1, 10_000);
        let s = a.claim().unwrap();
        drop(s);
        a.claim().unwrap().fill(1);
        let b = a.take().unwrap();
        assert_eq!(b.rows, [None, Some(1)]);
    }

    #[test]
    fn close_flushes_what_is_left_then_ends() {
        let a = assembler(2, 4, 1, 10_000);
        a.claim().unwrap().fill(1);
        a.close();
        assert_eq!(a.take().unwrap().rows, [Some(1)]);
        assert!(a.take().is_none());
        assert_eq!(a.claim().err(), Some(Closed));
    }

    #[test]
    fn claims_wait_for_a_free_buffer_and_every_row_arrives_once() {
        // 4 writers × 500 rows through 2 buffers of 3 rows: the engine sees every row exactly
        // once, with the values its writer wrote.
        let a = Arc::new(assembler(2, 3, 16, 1));
        let writers: Vec<_> = (0..4u32)
            .map(|w| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for i in 0..500u32 {
                        let id = w * 1000 + i;
                        let mut s = a.claim().unwrap();
                        s.values().fill(id as f32);
                        s.fill(id);
                    }
                })
            })
            .collect();
        let engine = {
            let a = a.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                while let Some(b) = a.take() {
                    for (r, m) in b.rows.iter().enumerate() {
                        let m = m.expect("written");
                        let row = &b.buffer.as_slice()[r * 16..(r + 1) * 16];
                        assert!(row.iter().all(|&v| v == m as f32));
                        seen.push(m);
                    }
                    a.release(b.buffer);
                }
                seen
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        a.close();
        let mut seen = engine.join().unwrap();
        seen.sort_unstable();
        let want: Vec<u32> = (0..4)
            .flat_map(|w| (0..500).map(move |i| w * 1000 + i))
            .collect();
        assert_eq!(seen, want);
    }
}
