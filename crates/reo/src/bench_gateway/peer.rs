//! The peer comparison of `reo bench gateway --peer nginx`: the same GET-hit load on reo, on
//! nginx's `proxy_cache` and on the floor server (`floor.rs`), in turn, round after round, over
//! the same objects (4 KiB, 64 KiB, 4 MiB). Each phase checks that every timed request was a hit
//! on its side (reo: the server's lookup and hit counters; nginx: `X-Cache-Status: HIT` on every
//! answer; the floor answers from memory) and every body byte for byte, and reads what the
//! server spent on it (`usage.rs`). Reported per size: medians over the rounds of requests/s,
//! p99, server CPU per request and context switches per request, reo / nginx ratios, and each
//! side's rate over the floor's.

use serde_json::{json, Value};

use super::client::Conn;
use super::floor::Floor;
use super::load::{self, get_exact, Target};
use super::nginx::{get_cached, Nginx};
use super::usage::{MachineTicks, Usage};
use super::{progress, CacheCounters};

/// One object set of the comparison.
pub struct ObjectSet<'a> {
    /// Its name in the JSON (`get4k`, …).
    pub name: &'static str,
    /// Path of object `i`: this followed by `i`.
    pub prefix: String,
    pub objects: &'a [Vec<u8>],
    /// Requests per client and round.
    pub per_client: usize,
}

/// One side's figures in one round.
#[derive(Debug, Clone, Copy, Default)]
struct Round {
    ops: f64,
    p99_ms: f64,
    /// The server's CPU per request.
    cpu_us: f64,
    switches: f64,
    /// The load generator's (this process's) CPU per request.
    load_cpu_us: f64,
    /// Shares of the machine's CPU time idle and stolen by the host during the phase.
    idle_share: f64,
    steal_share: f64,
    memory_share: f64,
}

/// Each round's order of the sides (0 reo, 1 nginx, 2 the floor): every side first once in any
/// three rounds, and over six every side follows each other side twice, so neither the warmth a
/// side leaves (page cache, CPU caches, a device's queue) nor going first favours one side.
const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1], [1, 0, 2], [2, 1, 0]];

/// The servers under comparison.
pub struct Sides<'a> {
    pub reo: &'a Target,
    pub reo_pid: u32,
    pub nginx: &'a Nginx,
    pub floor: &'a Floor,
    pub clients: usize,
    pub rounds: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn pick(c: usize, i: usize, n: usize) -> usize {
    (c * 7919 + i * 104_729) % n
}

impl Sides<'_> {
    /// One timed phase of `set` on the server at `target`, whose processes are `pids`:
    /// `get(conn, path, object)` sends each GET and checks its answer. Measures what the server
    /// and this process (the load) spent, and the machine's idle and stolen time.
    fn round<G>(&self, target: &Target, pids: &[u32], set: &ObjectSet<'_>, n: usize, get: G) -> Result<Round, String>
    where
        G: Fn(&mut Conn, &str, &[u8]) -> Result<Option<u64>, String> + Sync,
    {
        let me = [std::process::id()];
        let before = (Usage::of(pids)?, Usage::of(&me)?, MachineTicks::now()?);
        let g = load::run(target, self.clients, set.per_client, |c, cl, i| {
            let k = pick(cl, i, n);
            get(c, &format!("{}{k}", set.prefix), &set.objects[k])
        })?;
        let (server, load) = (Usage::of(pids)?.since(&before.0), Usage::of(&me)?.since(&before.1));
        let (idle_share, steal_share) = MachineTicks::now()?.shares_since(&before.2);
        let per = |x: f64| x / g.ops as f64;
        Ok(Round {
            ops: g.ops_per_sec(),
            p99_ms: g.p99_ms,
            cpu_us: per(server.cpu_secs * 1e6),
            switches: per(server.switches as f64),
            load_cpu_us: per(load.cpu_secs * 1e6),
            idle_share,
            steal_share,
            memory_share: 0.0,
        })
    }

    /// One timed phase on reo, checked all hits by its counters.
    fn reo_round(&self, set: &ObjectSet<'_>, n: usize) -> Result<Round, String> {
        let before = CacheCounters::read(self.reo)?;
        let r = self.round(self.reo, &[self.reo_pid], set, n, get_exact)?;
        let after = CacheCounters::read(self.reo)?;
        let ops = (set.per_client * self.clients) as u64;
        after.all_hits_since(&before, ops, set.name)?;
        Ok(Round { memory_share: after.memory_hits.saturating_sub(before.memory_hits) as f64 / ops as f64, ..r })
    }

    /// Runs the rounds of one object set; returns its JSON figures.
    pub fn compare(&self, set: &ObjectSet<'_>) -> Result<Value, String> {
        let nginx_target = Target { host: self.nginx.host.clone(), tls: None, ..self.reo.clone() };
        let floor_target = Target { host: self.floor.host.clone(), tls: None, ..self.reo.clone() };
        let (mut reo, mut ngx, mut flo) = (Vec::new(), Vec::new(), Vec::new());
        let n = set.objects.len();
        for round in 0..self.rounds {
            for side in ORDERS[round % ORDERS.len()] {
                match side {
                    0 => reo.push(self.reo_round(set, n)?),
                    // Every nginx answer checked a cache HIT, every floor answer its body.
                    1 => {
                        ngx.push(self.round(&nginx_target, &self.nginx.pids(), set, n, |c, p, want| {
                            get_cached(c, p, want, true)
                        })?)
                    }
                    _ => flo.push(self.round(&floor_target, &[self.floor.pid()], set, n, get_exact)?),
                }
            }
            let (r, g, f) = (reo[round], ngx[round], flo[round]);
            progress(format_args!(
                "{} round {}: reo {:.0} req/s ({:.0} µs CPU, {:.2} switches per request), nginx {:.0} req/s ({:.0} µs, {:.2}), floor {:.0} req/s ({:.0} µs, {:.2}); the load's CPU {:.0} / {:.0} / {:.0} µs",
                set.name,
                round + 1,
                r.ops,
                r.cpu_us,
                r.switches,
                g.ops,
                g.cpu_us,
                g.switches,
                f.ops,
                f.cpu_us,
                f.switches,
                r.load_cpu_us,
                g.load_cpu_us,
                f.load_cpu_us,
            ));
        }
        let m = |v: &[Round], f: fn(&Round) -> f64| median(v.iter().map(f).collect());
        let r2 = |x: f64| (x * 100.0).round() / 100.0;
        let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
        let spread = |v: &[Round]| {
            let ops: Vec<f64> = v.iter().map(|r| r.ops).collect();
            [ops.iter().copied().fold(f64::INFINITY, f64::min), ops.iter().copied().fold(0.0, f64::max)].map(r2)
        };
        let (ro, no) = (m(&reo, |r| r.ops), m(&ngx, |r| r.ops));
        let (rc, nc) = (m(&reo, |r| r.cpu_us), m(&ngx, |r| r.cpu_us));
        let (rp, np) = (m(&reo, |r| r.p99_ms), m(&ngx, |r| r.p99_ms));
        let fo = m(&flo, |r| r.ops);
        let all: Vec<Round> = reo.iter().chain(&ngx).chain(&flo).copied().collect();
        Ok(json!({
            "floor_ops": r2(fo), "floor_ops_range": spread(&flo), "floor_p99_ms": r2(m(&flo, |r| r.p99_ms)),
            "floor_cpu_us": r2(m(&flo, |r| r.cpu_us)), "floor_switches_per_req": r2(m(&flo, |r| r.switches)),
            "reo_of_floor": r3(ro / fo), "floor_of_nginx": r3(fo / no),
            "reo_load_cpu_us": r2(m(&reo, |r| r.load_cpu_us)), "nginx_load_cpu_us": r2(m(&ngx, |r| r.load_cpu_us)),
            "floor_load_cpu_us": r2(m(&flo, |r| r.load_cpu_us)),
            "reo_idle_share": r3(m(&reo, |r| r.idle_share)), "nginx_idle_share": r3(m(&ngx, |r| r.idle_share)),
            "floor_idle_share": r3(m(&flo, |r| r.idle_share)), "steal_share": r3(m(&all, |r| r.steal_share)),
            "reo_ops": r2(ro), "nginx_ops": r2(no), "ops_ratio": r3(ro / no),
            "reo_ops_range": spread(&reo), "nginx_ops_range": spread(&ngx),
            "reo_p99_ms": r2(rp), "nginx_p99_ms": r2(np),
            "reo_cpu_us": r2(rc), "nginx_cpu_us": r2(nc), "cpu_ratio": r3(rc / nc),
            "reo_switches_per_req": r2(m(&reo, |r| r.switches)),
            "nginx_switches_per_req": r2(m(&ngx, |r| r.switches)),
            "reo_memory_hit_share": r3(m(&reo, |r| r.memory_share)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
