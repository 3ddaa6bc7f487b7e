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
use super::usage::Usage;
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
#[derive(Debug, Clone, Copy)]
struct Round {
    ops: f64,
    p99_ms: f64,
    cpu_us: f64,
    switches: f64,
    memory_share: f64,
}

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
    /// One timed phase on reo, checked all hits by its counters.
    fn reo_round(&self, set: &ObjectSet<'_>, n: usize) -> Result<Round, String> {
        let before = (Usage::of(&[self.reo_pid])?, CacheCounters::read(self.reo)?);
        let r = load::run(self.reo, self.clients, set.per_client, |c, cl, i| {
            let k = pick(cl, i, n);
            get_exact(c, &format!("{}{k}", set.prefix), &set.objects[k])
        })?;
        let used = Usage::of(&[self.reo_pid])?.since(&before.0);
        let after = CacheCounters::read(self.reo)?;
        after.all_hits_since(&before.1, r.ops, set.name)?;
        Ok(Round {
            ops: r.ops_per_sec(),
            p99_ms: r.p99_ms,
            cpu_us: used.cpu_secs * 1e6 / r.ops as f64,
            switches: used.switches as f64 / r.ops as f64,
            memory_share: after.memory_hits.saturating_sub(before.1.memory_hits) as f64 / r.ops as f64,
        })
    }

    /// One timed phase on a server other than reo, whose processes are `pids`: `get(conn,
    /// path, object)` sends each GET and checks its answer.
    fn other_round<G>(
        &self,
        target: &Target,
        pids: &[u32],
        set: &ObjectSet<'_>,
        n: usize,
        get: G,
    ) -> Result<Round, String>
    where
        G: Fn(&mut Conn, &str, &[u8]) -> Result<Option<u64>, String> + Sync,
    {
        let before = Usage::of(pids)?;
        let g = load::run(target, self.clients, set.per_client, |c, cl, i| {
            let k = pick(cl, i, n);
            get(c, &format!("{}{k}", set.prefix), &set.objects[k])
        })?;
        let used = Usage::of(pids)?.since(&before);
        Ok(Round {
            ops: g.ops_per_sec(),
            p99_ms: g.p99_ms,
            cpu_us: used.cpu_secs * 1e6 / g.ops as f64,
            switches: used.switches as f64 / g.ops as f64,
            memory_share: 0.0,
        })
    }

    /// Runs the rounds of one object set; returns its JSON figures.
    pub fn compare(&self, set: &ObjectSet<'_>) -> Result<Value, String> {
        let nginx_target = Target { host: self.nginx.host.clone(), tls: None, ..self.reo.clone() };
        let floor_target = Target { host: self.floor.host.clone(), tls: None, ..self.reo.clone() };
        let (mut reo, mut ngx, mut flo) = (Vec::new(), Vec::new(), Vec::new());
        let n = set.objects.len();
        for round in 0..self.rounds {
            // The sides take turns going first: none always finds the machine warmer.
            for side in 0..3 {
                match (round + side) % 3 {
                    0 => reo.push(self.reo_round(set, n)?),
                    // Every nginx answer checked a cache HIT, every floor answer its body.
                    1 => ngx.push(self.other_round(&nginx_target, &self.nginx.pids(), set, n, |c, p, want| {
                        get_cached(c, p, want, true)
                    })?),
                    _ => flo.push(self.other_round(&floor_target, &[self.floor.pid()], set, n, get_exact)?),
                }
            }
            let (r, g, f) = (reo[round], ngx[round], flo[round]);
            progress(format_args!(
                "{} round {}: reo {:.0} req/s ({:.0} µs CPU, {:.2} switches per request), nginx {:.0} req/s ({:.0} µs, {:.2}), floor {:.0} req/s ({:.0} µs)",
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
        Ok(json!({
            "floor_ops": r2(fo), "floor_cpu_us": r2(m(&flo, |r| r.cpu_us)), "floor_ops_range": spread(&flo),
            "reo_of_floor": r3(ro / fo), "nginx_of_floor": r3(no / fo), "floor_of_nginx": r3(fo / no),
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
