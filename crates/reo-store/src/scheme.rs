//! Redundancy schemes and their stripe geometry.
//!
//! A scheme says how a blob's chunks are protected across the N devices of the array:
//! `replicate(r)` copies, `rs(k, p)` Reed-Solomon, or `none` (isolated on one device, or striped
//! over all of them like RAID-0).

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Where unprotected (`none`) data is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    /// The whole blob on one device chosen by its placement key: a dead device loses only the
    /// blobs it holds.
    Isolated,
    /// Chunks spread over all devices (the Reo paper's 0-parity, docs/REFERENCES.md §P1): faster,
    /// but any dead device loses every blob with a chunk on it.
    Striped,
}

/// A redundancy scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `r` identical copies on distinct devices; tolerates r − 1 failures.
    Replicate(u8),
    /// Reed-Solomon: `k` data + `p` parity chunks per stripe; tolerates p failures.
    Rs {
        /// Data chunks per stripe.
        k: u8,
        /// Parity chunks per stripe.
        p: u8,
    },
    /// No redundancy.
    None(Placement),
}

/// How one scheme lays a stripe over the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Devices one stripe touches.
    pub width: usize,
    /// Chunks per stripe that carry distinct data (copies and parity excluded).
    pub data: usize,
    /// Stripes side by side in one row.
    pub stripes_per_row: usize,
}

impl Scheme {
    /// Checks the scheme can be laid over `devices` devices.
    pub fn validate(&self, devices: usize) -> Result<()> {
        let bad = |m: String| Err(Error::Config(format!("scheme {self}: {m}")));
        match *self {
            Scheme::Replicate(r) if r < 1 || r as usize > devices => {
                bad(format!("needs 1 ≤ r ≤ {devices} (the number of devices)"))
            }
            Scheme::Rs { k, p } if k < 1 || p < 1 => bad("needs k ≥ 1 and p ≥ 1".into()),
            Scheme::Rs { k, p } if k as usize + p as usize > devices => {
                bad(format!("needs k + p ≤ {devices} (the number of devices)"))
            }
            _ => Ok(()),
        }
    }

    /// Stripe geometry over `devices` devices. `Isolated` uses one device per blob.
    pub fn geometry(&self, devices: usize) -> Geometry {
        let (width, data) = match *self {
            Scheme::Replicate(r) => (r as usize, 1),
            Scheme::Rs { k, p } => (k as usize + p as usize, k as usize),
            Scheme::None(Placement::Striped) => (devices, devices),
            Scheme::None(Placement::Isolated) => (1, 1),
        };
        let stripes_per_row = match self {
            Scheme::None(Placement::Isolated) => 1,
            _ => devices / width,
        };
        Geometry { width, data, stripes_per_row }
    }

    /// Device failures every blob of this scheme survives.
    pub fn tolerance(&self) -> usize {
        match *self {
            Scheme::Replicate(r) => r as usize - 1,
            Scheme::Rs { p, .. } => p as usize,
            Scheme::None(_) => 0,
        }
    }

    /// True for the one-device-per-blob placement.
    pub fn is_isolated(&self) -> bool {
        matches!(self, Scheme::None(Placement::Isolated))
    }

    /// Compact code for the on-device format: (kind, a, b).
    pub(crate) fn encode(&self) -> [u8; 3] {
        match *self {
            Scheme::Replicate(r) => [1, r, 0],
            Scheme::Rs { k, p } => [2, k, p],
            Scheme::None(Placement::Isolated) => [3, 0, 0],
            Scheme::None(Placement::Striped) => [3, 1, 0],
        }
    }

    /// Inverse of [`Scheme::encode`]; `None` for unknown codes.
    pub(crate) fn decode(b: [u8; 3]) -> Option<Scheme> {
        match b {
            [1, r, 0] if r >= 1 => Some(Scheme::Replicate(r)),
            [2, k, p] if k >= 1 && p >= 1 => Some(Scheme::Rs { k, p }),
            [3, 0, 0] => Some(Scheme::None(Placement::Isolated)),
            [3, 1, 0] => Some(Scheme::None(Placement::Striped)),
            _ => None,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheme::Replicate(r) => write!(f, "replicate({r})"),
            Scheme::Rs { k, p } => write!(f, "rs({k},{p})"),
            Scheme::None(Placement::Isolated) => write!(f, "none(isolated)"),
            Scheme::None(Placement::Striped) => write!(f, "none(striped)"),
        }
    }
}

impl FromStr for Scheme {
    type Err = Error;
    /// Parses `replicate(r)`, `rs(k,p)`, `none`, `none(isolated)`, `none(striped)`.
    fn from_str(s: &str) -> Result<Scheme> {
        let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        let t = t.to_ascii_lowercase();
        let args = |name: &str| -> Option<Vec<u8>> {
            let inner = t.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')?;
            inner.split(',').map(|x| x.parse().ok()).collect()
        };
        let scheme = match t.as_str() {
            "none" | "none(isolated)" => Some(Scheme::None(Placement::Isolated)),
            "none(striped)" => Some(Scheme::None(Placement::Striped)),
            _ => match (args("replicate"), args("rs")) {
                (Some(a), _) if a.len() == 1 && a[0] >= 1 => Some(Scheme::Replicate(a[0])),
                (_, Some(a)) if a.len() == 2 && a[0] >= 1 && a[1] >= 1 => Some(Scheme::Rs { k: a[0], p: a[1] }),
                _ => None,
            },
        };
        scheme.ok_or_else(|| {
            Error::Config(format!("unknown scheme '{s}': use replicate(r), rs(k,p), none(isolated) or none(striped)"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_display_roundtrip() {
        for s in ["replicate(3)", "rs(4,2)", "none(isolated)", "none(striped)"] {
            let sc: Scheme = s.parse().unwrap();
            assert_eq!(sc.to_string(), s);
            assert_eq!(Scheme::decode(sc.encode()), Some(sc));
        }
        assert_eq!("none".parse::<Scheme>().unwrap(), Scheme::None(Placement::Isolated));
        for bad in ["rs(0,2)", "rs(2,0)", "replicate(0)", "raid5", "rs(1,2,3)"] {
            assert!(bad.parse::<Scheme>().is_err(), "{bad}");
        }
    }

    #[test]
    fn geometry_and_validation() {
        let g = Scheme::Rs { k: 2, p: 1 }.geometry(6);
        assert_eq!((g.width, g.data, g.stripes_per_row), (3, 2, 2));
        let g = Scheme::Replicate(3).geometry(4);
        assert_eq!((g.width, g.data, g.stripes_per_row), (3, 1, 1));
        assert!(Scheme::Rs { k: 3, p: 2 }.validate(4).is_err());
        assert!(Scheme::Replicate(5).validate(4).is_err());
        assert!(Scheme::Rs { k: 2, p: 2 }.validate(4).is_ok());
        assert_eq!(Scheme::Rs { k: 2, p: 2 }.tolerance(), 2);
    }
}
