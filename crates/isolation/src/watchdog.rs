//! The watchdog: one thread per pool that kills the worker of a job past its wall-clock
//! deadline, and tells the pool which jobs it killed.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::lock;

/// Kills workers whose job is past its deadline.
pub(super) struct Watchdog {
    state: Mutex<WatchState>,
    wake: Condvar,
}

#[derive(Default)]
struct WatchState {
    /// job → (worker pid, deadline)
    jobs: HashMap<u64, (u32, Instant)>,
    /// Jobs whose worker the watchdog killed.
    expired: Vec<u64>,
    stop: bool,
}

impl Watchdog {
    pub(super) fn start() -> Arc<Watchdog> {
        let dog = Arc::new(Watchdog {
            state: Mutex::new(WatchState::default()),
            wake: Condvar::new(),
        });
        let weak = Arc::downgrade(&dog);
        let _ = std::thread::Builder::new()
            .name("extract-watchdog".into())
            .spawn(move || {
                while let Some(dog) = weak.upgrade() {
                    if !dog.tick() {
                        return;
                    }
                }
            });
        dog
    }

    /// Wait for the next deadline (or a change), kill what is overdue. False once stopped.
    fn tick(&self) -> bool {
        let mut st = lock(&self.state);
        if st.stop {
            return false;
        }
        let now = Instant::now();
        let overdue: Vec<(u64, u32)> = st
            .jobs
            .iter()
            .filter(|(_, (_, deadline))| *deadline <= now)
            .map(|(job, (pid, _))| (*job, *pid))
            .collect();
        for (job, pid) in overdue {
            st.jobs.remove(&job);
            st.expired.push(job);
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let wait = st
            .jobs
            .values()
            .map(|(_, d)| d.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_millis(500))
            .min(Duration::from_millis(500));
        drop(self.wake.wait_timeout(st, wait));
        true
    }

    pub(super) fn watch(&self, job: u64, pid: u32, deadline: Instant) {
        lock(&self.state).jobs.insert(job, (pid, deadline));
        self.wake.notify_all();
    }

    /// Stop watching `job`; true if the watchdog already killed its worker.
    pub(super) fn release(&self, job: u64) -> bool {
        let mut st = lock(&self.state);
        st.jobs.remove(&job);
        match st.expired.iter().position(|j| *j == job) {
            Some(i) => {
                st.expired.swap_remove(i);
                true
            }
            None => false,
        }
    }

    pub(super) fn stop(&self) {
        lock(&self.state).stop = true;
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::process::{Child, Command};

    use super::*;

    /// A real process that would run for a minute.
    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("start sleep")
    }

    /// The child's exit status, or `None` if it is still running after `limit` (a hang
    /// guard, not a timing assertion).
    fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    #[test]
    fn the_watchdog_kills_a_job_past_its_deadline_and_only_that_one() {
        use std::os::unix::process::ExitStatusExt;
        let dog = Watchdog::start();
        let mut late = sleeper();
        let mut on_time = sleeper();
        dog.watch(1, late.id(), Instant::now() + Duration::from_millis(100));
        dog.watch(2, on_time.id(), Instant::now() + Duration::from_secs(3600));
        let status = exit_within(&mut late, Duration::from_secs(30));
        assert_eq!(
            status.and_then(|s| s.signal()),
            Some(9),
            "killed by SIGKILL"
        );
        assert!(dog.release(1), "job 1 reported as expired");
        assert!(!dog.release(1), "reported once");
        // The other job's worker lives on and is released as not expired.
        assert!(on_time.try_wait().unwrap().is_none());
        assert!(!dog.release(2));
        dog.stop();
        on_time.kill().unwrap();
        on_time.wait().unwrap();
    }

    #[test]
    fn a_released_job_is_not_killed_at_its_deadline() {
        let dog = Watchdog::start();
        let mut child = sleeper();
        dog.watch(7, child.id(), Instant::now() + Duration::from_millis(100));
        assert!(!dog.release(7));
        // Long past the deadline, the watchdog having woken up several times meanwhile.
        std::thread::sleep(Duration::from_millis(600));
        assert!(
            child.try_wait().unwrap().is_none(),
            "released job's worker killed"
        );
        dog.stop();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
