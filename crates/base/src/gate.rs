//! A budget of bytes in flight between pipeline stages.
//!
//! Channel capacities count items, and an item can be a 256 MiB file or its chunks: sixteen of
//! those would be gigabytes. The walk stage takes a [`Permit`] for a file's bytes before handing
//! it on, waiting while the budget is spent; the permit travels with the file (resized to its
//! chunks' text after chunking) and gives the bytes back when dropped. An item larger than the
//! whole budget goes through alone, so nothing can wait forever.

use std::sync::{Arc, Condvar, Mutex};

use crate::lock;

#[derive(Debug)]
struct State {
    budget: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// Bytes in flight, bounded by a budget. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct ByteGate(Arc<State>);

/// Bytes taken from a [`ByteGate`], given back on drop.
#[derive(Debug)]
pub struct Permit {
    gate: ByteGate,
    bytes: u64,
}

impl ByteGate {
    pub fn new(budget: u64) -> Self {
        ByteGate(Arc::new(State {
            budget,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }))
    }

    fn fits(&self, used: u64, bytes: u64) -> bool {
        used == 0 || used.saturating_add(bytes) <= self.0.budget
    }

    /// Take `bytes`, waiting until they fit in the budget, or until nothing else is in flight
    /// (an item larger than the budget goes alone).
    pub fn acquire(&self, bytes: u64) -> Permit {
        let mut used = lock(&self.0.used);
        while !self.fits(*used, bytes) {
            used = self
                .0
                .freed
                .wait(used)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *used += bytes;
        Permit {
            gate: self.clone(),
            bytes,
        }
    }

    /// Take `bytes` if they fit now.
    pub fn try_acquire(&self, bytes: u64) -> Option<Permit> {
        let mut used = lock(&self.0.used);
        self.fits(*used, bytes).then(|| {
            *used += bytes;
            Permit {
                gate: self.clone(),
                bytes,
            }
        })
    }

    /// Bytes currently taken.
    #[cfg(test)]
    pub fn in_flight(&self) -> u64 {
        *lock(&self.0.used)
    }
}

impl Permit {
    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Hold `more` bytes besides these if they fit in the budget now (never past it, however
    /// little else is in flight); whether they did.
    pub fn try_grow(&mut self, more: u64) -> bool {
        let mut used = lock(&self.gate.0.used);
        let after = used.saturating_add(more);
        if after > self.gate.0.budget {
            return false;
        }
        *used = after;
        self.bytes += more;
        true
    }

    /// Hold `bytes` from now on instead (what an item weighs changes as it is transformed).
    /// Never waits: growing may overdraw the budget, which only makes later takers wait.
    pub fn resize(&mut self, bytes: u64) {
        let mut used = lock(&self.gate.0.used);
        *used = used.saturating_sub(self.bytes).saturating_add(bytes);
        if bytes < self.bytes {
            self.gate.0.freed.notify_all();
        }
        self.bytes = bytes;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut used = lock(&self.gate.0.used);
        *used = used.saturating_sub(self.bytes);
        self.gate.0.freed.notify_all();
    }
}

/// How many of something are under way, and the most that ever were at once (the service's
/// searches and tool calls at work, for its metrics). Cheap to clone (shared counts).
#[derive(Debug, Clone, Default)]
pub struct Gauge(Arc<GaugeCounts>);

#[derive(Debug, Default)]
struct GaugeCounts {
    now: std::sync::atomic::AtomicU64,
    peak: std::sync::atomic::AtomicU64,
}

/// One thing under way on a [`Gauge`], counted until dropped.
#[derive(Debug)]
pub struct Counted(Gauge);

impl Gauge {
    /// Count one more under way until the returned guard is dropped.
    pub fn enter(&self) -> Counted {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.0.now.fetch_add(1, SeqCst) + 1;
        self.0.peak.fetch_max(now, SeqCst);
        Counted(self.clone())
    }

    /// Under way now, and the most at once so far.
    pub fn read(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.0.now.load(SeqCst), self.0.peak.load(SeqCst))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0
             .0
            .now
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_oversized_item_goes_alone_and_blocks_the_rest() {
        let gate = ByteGate::new(100);
        let big = gate.acquire(500); // larger than the budget, nothing in flight: goes
        assert_eq!(gate.in_flight(), 500);
        assert!(gate.try_acquire(1).is_none());
        drop(big);
        let a = gate.try_acquire(60).expect("fits");
        assert!(gate.try_acquire(41).is_none(), "beyond the budget");
        let b = gate.try_acquire(40).expect("fits exactly");
        assert_eq!(gate.in_flight(), 100);
        drop((a, b));
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn a_gauge_counts_what_is_under_way_and_its_peak() {
        let g = Gauge::default();
        let a = g.enter();
        let b = g.enter();
        assert_eq!(g.read(), (2, 2));
        drop(a);
        let c = g.enter();
        drop((b, c));
        assert_eq!(g.read(), (0, 2));
    }

    #[test]
    fn a_permit_grows_only_within_the_budget() {
        let gate = ByteGate::new(100);
        let mut p = gate.try_acquire(0).expect("nothing taken");
        assert!(p.try_grow(70));
        let other = gate.try_acquire(20).expect("fits");
        assert!(!p.try_grow(11), "past the budget");
        assert!(p.try_grow(10));
        assert_eq!(gate.in_flight(), 100);
        drop((p, other));
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn a_waiting_taker_proceeds_when_bytes_are_given_back() {
        let gate = ByteGate::new(100);
        let mut held = gate.acquire(90);
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let p = gate.acquire(50);
                p.bytes
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished(), "50 more bytes do not fit beside 90");
        held.resize(40); // a file became its (smaller) chunks
        assert_eq!(waiter.join().expect("waiter"), 50);
        assert_eq!(gate.in_flight(), 40);
        drop(held);
        assert_eq!(gate.in_flight(), 0);
    }
}
