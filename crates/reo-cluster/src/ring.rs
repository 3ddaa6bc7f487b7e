//! The home of every object: consistent hashing over the live members with virtual nodes
//! ([`Ring`]), so a member joining or leaving moves only the keys between it and its
//! neighbours on the ring (about 1/N of them).

use sha2::{Digest, Sha256};

/// Points each member has on the ring: enough that homes spread within a few percent.
pub const VNODES: usize = 128;

/// A consistent-hash ring over member ids.
#[derive(Debug, Clone, Default)]
pub struct Ring {
    points: Vec<(u64, u32)>,
    members: Vec<String>,
}

fn hash(parts: &[&[u8]]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u32).to_le_bytes());
        h.update(p);
    }
    let d = h.finalize();
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))
}

impl Ring {
    /// The ring over `members` (their order does not matter).
    pub fn new<'a>(members: impl IntoIterator<Item = &'a str>) -> Ring {
        let mut members: Vec<String> = members.into_iter().map(str::to_string).collect();
        members.sort();
        members.dedup();
        let mut points = Vec::with_capacity(members.len() * VNODES);
        for (i, m) in members.iter().enumerate() {
            for v in 0..VNODES as u32 {
                points.push((hash(&[m.as_bytes(), &v.to_le_bytes()]), i as u32));
            }
        }
        points.sort_unstable();
        Ring { points, members }
    }

    /// The home node of `bucket/key`; `None` on an empty ring.
    pub fn home(&self, bucket: &str, key: &str) -> Option<&str> {
        if self.points.is_empty() {
            return None;
        }
        let h = hash(&[bucket.as_bytes(), key.as_bytes()]);
        let i = self.points.partition_point(|&(p, _)| p < h) % self.points.len();
        Some(&self.members[self.points[i].1 as usize])
    }

    /// The share of the ring (of all keys) `member` is home of.
    pub fn share(&self, member: &str) -> f64 {
        let Some(i) = self.members.iter().position(|m| m == member) else { return 0.0 };
        let n = self.points.len();
        let mut owned: u128 = 0;
        for (j, &(p, m)) in self.points.iter().enumerate() {
            if m as usize == i {
                // A point owns the arc from its predecessor (exclusive) to itself.
                let prev = if j == 0 { self.points[n - 1].0 } else { self.points[j - 1].0 };
                owned += u128::from(p.wrapping_sub(prev));
            }
        }
        if n == 1 || self.members.len() == 1 {
            return 1.0;
        }
        owned as f64 / 2f64.powi(64)
    }

    /// The members, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_moves_only_keys_to_the_new_member() {
        let before = Ring::new(["a", "b", "c"]);
        let after = Ring::new(["a", "b", "c", "d"]);
        let mut moved = 0;
        let mut per = std::collections::HashMap::new();
        for i in 0..20_000 {
            let k = format!("k{i}");
            let (x, y) = (before.home("b", &k).unwrap(), after.home("b", &k).unwrap());
            *per.entry(y.to_string()).or_insert(0) += 1;
            if x != y {
                assert_eq!(y, "d", "a key moved between old members");
                moved += 1;
            }
        }
        // About a quarter moves to the new member; each member gets its share within 25%.
        assert!((3_500..6_500).contains(&moved), "{moved} moved");
        for (m, n) in per {
            assert!((3_750..6_250).contains(&n), "{m} got {n}");
        }
    }

    #[test]
    fn the_home_does_not_depend_on_member_order() {
        let (x, y) = (Ring::new(["a", "b", "c"]), Ring::new(["c", "a", "b"]));
        for i in 0..1000 {
            assert_eq!(x.home("b", &i.to_string()), y.home("b", &i.to_string()));
        }
        assert_eq!(Ring::default().home("b", "k"), None);
        let total: f64 = ["a", "b", "c"].iter().map(|m| x.share(m)).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        assert!((0.2..0.45).contains(&x.share("a")));
    }
}
