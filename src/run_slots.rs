//! [`RunSlots`]: which scopes have a run going, and the whole index held by a repair,
//! export or import. Runs of different scopes go at once; runs of one scope go one at a
//! time, in the order they asked.

use std::path::Path;
use std::sync::Mutex;

use extractors::Scope;

use crate::error::Result;
use crate::lock;

/// Which scopes have a run going. Runs of different scopes go at once (their catalog
/// entries and points are apart; the content indexes they share are written and deleted
/// under the catalog's lock); runs of one scope, and repair or export, go one at a time.
#[derive(Default)]
pub(crate) struct RunSlots {
    state: Mutex<SlotState>,
    freed: std::sync::Condvar,
}

#[derive(Default)]
struct SlotState {
    /// Keys of the scopes with a run going.
    busy: std::collections::HashSet<String>,
    /// A repair, export or import has the whole index.
    exclusive: bool,
    /// Set while any run goes: a crash leaves it, and the next start repairs.
    marker: Option<crate::index::DirtyMarker>,
    /// A run failed since the marker was set: the marker stays until a repair.
    failed: bool,
    /// Per scope key, the runs waiting for it, served in the order they asked (a ticket
    /// each): (next ticket, ticket served next).
    turns: std::collections::HashMap<String, (u64, u64)>,
}

/// A run's hold on its scope; ended by [`RunSlot::end`] (dropped without it: as failed).
pub(crate) struct RunSlot<'a> {
    slots: &'a RunSlots,
    key: Option<String>,
}

impl RunSlots {
    fn wait<'a>(
        &'a self,
        mut state: std::sync::MutexGuard<'a, SlotState>,
        until: impl Fn(&SlotState) -> bool,
    ) -> std::sync::MutexGuard<'a, SlotState> {
        while !until(&state) {
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        state
    }

    /// Wait until `scope` has no run going and every run that asked for it earlier has had
    /// its turn, then hold it (marking the data dir as being written when no other run is).
    pub(crate) fn begin(&self, data_dir: &Path, scope: &Scope) -> Result<RunSlot<'_>> {
        let key = scope.key();
        let mut state = lock(&self.state);
        let ticket = {
            let turn = state.turns.entry(key.clone()).or_default();
            turn.0 += 1;
            turn.0 - 1
        };
        let mut state = self.wait(state, |s| {
            !s.exclusive
                && !s.busy.contains(&key)
                && s.turns.get(&key).is_some_and(|t| t.1 == ticket)
        });
        let turn = state.turns.entry(key.clone()).or_default();
        turn.1 += 1;
        if turn.0 == turn.1 {
            state.turns.remove(&key); // nobody else waits
        }
        let marked = match state.marker {
            Some(_) => Ok(()),
            None => crate::index::DirtyMarker::set(data_dir).map(|m| state.marker = Some(m)),
        };
        if let Err(e) = marked {
            drop(state);
            self.freed.notify_all(); // the next ticket's turn
            return Err(e);
        }
        state.busy.insert(key.clone());
        Ok(RunSlot {
            slots: self,
            key: Some(key),
        })
    }

    /// Whether a run is waiting for `scope_key` (a run holding it should end soon: see
    /// the upload runner, whose run of a scope could otherwise go on for as long as uploads
    /// keep coming).
    pub(crate) fn wanted(&self, scope_key: &str) -> bool {
        lock(&self.state)
            .turns
            .get(scope_key)
            .is_some_and(|t| t.0 > t.1)
    }

    /// Wait until no run goes, then hold the whole index until the guard drops.
    pub(crate) fn exclusive(&self) -> ExclusiveSlot<'_> {
        let mut state = self.wait(lock(&self.state), |s| !s.exclusive && s.busy.is_empty());
        state.exclusive = true;
        ExclusiveSlot(self)
    }

    /// A repair made the store and the catalog agree again.
    pub(crate) fn repaired(&self) {
        lock(&self.state).failed = false;
    }

    fn release(&self, key: &str, ok: bool) -> Result<()> {
        let mut state = lock(&self.state);
        state.busy.remove(key);
        state.failed |= !ok;
        let mut result = Ok(());
        if state.busy.is_empty() {
            if let Some(marker) = state.marker.take() {
                // Store and catalog agree: nothing to repair at the next start.
                if !state.failed {
                    result = marker.clear();
                }
            }
        }
        drop(state);
        self.freed.notify_all();
        result
    }
}

impl RunSlot<'_> {
    /// The run ended: `ok` if the catalog and the store agree.
    pub(crate) fn end(mut self, ok: bool) -> Result<()> {
        match self.key.take() {
            Some(key) => self.slots.release(&key, ok),
            None => Ok(()),
        }
    }
}

impl Drop for RunSlot<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let _ = self.slots.release(&key, false);
        }
    }
}

/// The whole index held by a repair, export or import.
pub(crate) struct ExclusiveSlot<'a>(&'a RunSlots);

impl Drop for ExclusiveSlot<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.exclusive = false;
        drop(state);
        self.0.freed.notify_all();
    }
}
