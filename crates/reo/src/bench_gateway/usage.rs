//! What a server process (or a group of them: nginx's workers) spent during a load phase, read
//! from `/proc`: CPU time (user + system, of every thread, living or exited, from
//! `/proc/PID/stat`) and context switches (voluntary and involuntary, per thread from
//! `/proc/PID/task/TID/status`: each thread alive at the end counts what it did since the start,
//! or since it was created; a thread that exits during the phase takes its count along, which
//! only under-counts — tokio's blocking threads exit after 10 s idle, not under load); and the
//! whole machine's idle and stolen CPU time (`/proc/stat`), which says whether a phase was bound
//! by the two cores and how much of them the host took.

use std::collections::HashMap;
use std::path::Path;

/// Cumulative usage of a set of processes at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// CPU seconds, user and system.
    pub cpu_secs: f64,
    /// Context switches per thread id.
    threads: HashMap<u32, u64>,
}

/// What was spent between two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// CPU seconds, user and system.
    pub cpu_secs: f64,
    /// Context switches.
    pub switches: u64,
}

impl Usage {
    /// The usage of `pids` now.
    pub fn of(pids: &[u32]) -> Result<Usage, String> {
        // SAFETY: sysconf only reads a system constant.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let mut u = Usage::default();
        for &pid in pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map_err(|e| format!("/proc/{pid}/stat: {e} (did the server exit?)"))?;
            let (utime, stime) = cpu_ticks(&stat).ok_or_else(|| format!("/proc/{pid}/stat: unexpected format"))?;
            u.cpu_secs += (utime + stime) as f64 / ticks;
            u.threads.extend(switches(&Path::new("/proc").join(pid.to_string()).join("task")));
        }
        Ok(u)
    }

    /// What was spent between `before` and `self`.
    pub fn since(&self, before: &Usage) -> Spent {
        let switches =
            self.threads.iter().map(|(tid, &n)| n.saturating_sub(before.threads.get(tid).copied().unwrap_or(0))).sum();
        Spent { cpu_secs: self.cpu_secs - before.cpu_secs, switches }
    }
}

/// The machine's CPU time at one moment, in clock ticks summed over its CPUs (`/proc/stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MachineTicks {
    total: u64,
    /// Idle and waiting for I/O.
    idle: u64,
    /// Taken by the host (a virtual machine's other tenants).
    steal: u64,
}

impl MachineTicks {
    pub fn now() -> Result<MachineTicks, String> {
        let stat = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
        machine_ticks(&stat).ok_or_else(|| "/proc/stat: unexpected format".to_string())
    }

    /// The shares of the time since `before` that were idle and stolen.
    pub fn shares_since(&self, before: &MachineTicks) -> (f64, f64) {
        let total = self.total.saturating_sub(before.total).max(1) as f64;
        (self.idle.saturating_sub(before.idle) as f64 / total, self.steal.saturating_sub(before.steal) as f64 / total)
    }
}

/// The first line of `/proc/stat`: `cpu user nice system idle iowait irq softirq steal …` (guest
/// time, after steal, is already counted in user and nice).
fn machine_ticks(stat: &str) -> Option<MachineTicks> {
    let mut f = stat.lines().next()?.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    (v.len() == 8).then(|| MachineTicks { total: v.iter().sum(), idle: v[3] + v[4], steal: v[7] })
}

/// (utime, stime) in clock ticks from a `/proc/PID/stat` line: fields 14 and 15, counted after
/// the command name's closing parenthesis (the name may hold spaces).
fn cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// Context switches of each thread under `/proc/PID/task`.
fn switches(tasks: &Path) -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir(tasks) else { return Vec::new() };
    dir.flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse::<u32>().ok()?;
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            Some((tid, context_switches(&status)))
        })
        .collect()
}

/// Voluntary plus involuntary context switches from a `status` file.
fn context_switches(status: &str) -> u64 {
    status
        .lines()
        .filter(|l| l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// The children of `parent` whose command line starts with `title` (nginx's worker processes
/// under its master, not its cache manager and loader, which do no request's work and the
/// loader exits a minute after start).
pub fn children(parent: u32, title: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| {
                let rest = &s[s.rfind(')')? + 1..];
                rest.split_whitespace().nth(1)?.parse::<u32>().ok()
            }) == Some(parent)
        })
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(title.as_bytes())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_cpu_fields_after_a_name_with_spaces() {
        let line = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 1000 0 0";
        assert_eq!(cpu_ticks(line), Some((250, 75)));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn this_process_uses_cpu_and_switches() {
        let me = std::process::id();
        let a = Usage::of(&[me]).unwrap();
        // A sleep is a voluntary switch; then work until the clock ticks (10 ms resolution).
        std::thread::sleep(std::time::Duration::from_millis(5));
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        let d = loop {
            for i in 0..1_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            let d = Usage::of(&[me]).unwrap().since(&a);
            if d.cpu_secs > 0.0 || t0.elapsed() > std::time::Duration::from_secs(10) {
                break d;
            }
        };
        assert!(d.cpu_secs > 0.0 && d.switches > 0, "{d:?}");
    }

    #[test]
    fn reads_the_machine_line_of_proc_stat() {
        let stat = "cpu  100 5 50 800 20 3 2 20 7 0\ncpu0 50 2 25 400 10 1 1 10 3 0\n";
        let m = machine_ticks(stat).unwrap();
        assert_eq!(m, MachineTicks { total: 1000, idle: 820, steal: 20 });
        let later = MachineTicks { total: 1100, idle: 870, steal: 30 };
        assert_eq!(later.shares_since(&m), (0.5, 0.1));
        assert_eq!(machine_ticks("cpu0 1 2 3"), None);
        assert_eq!(machine_ticks("cpu 1 2 3"), None);
        assert!(MachineTicks::now().is_ok());
    }

    #[test]
    fn counts_both_kinds_of_switches() {
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(context_switches(status), 10);
    }
}
