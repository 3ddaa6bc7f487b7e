//! [`Redundancy`]: how the cache protects its data — Reo's differentiated classes under a
//! redundancy budget (Reo-x%), or one of the paper's uniform baselines, all through the same code
//! — and [`ClassSchemes`], the class → redundancy-scheme map each of them gives.
//!
//! Names are the stable, lower-case ones reports use: `reo-10%`, `reo-20%`, `reo-40%` (any
//! `reo-N%`), `0-parity`, `1-parity`, `2-parity`, `full-replication`.

use std::fmt;
use std::str::FromStr;

use reo_store::{Placement, Scheme};

use crate::object::Class;

/// The redundancy scheme of each [`Class`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassSchemes(pub [Scheme; 4]);

impl ClassSchemes {
    /// Reo's defaults over `devices` devices: metadata and dirty data replicated on every device
    /// (at least 2 copies when there are 2+ devices), hot data Reed-Solomon with 2 parity
    /// (`rs(n−2, 2)`; with fewer than 3 devices, replication), cold data unprotected and isolated.
    pub fn reo_default(devices: usize) -> ClassSchemes {
        let rep =
            if devices >= 2 { Scheme::Replicate(devices.min(255) as u8) } else { Scheme::None(Placement::Isolated) };
        let hot = if devices >= 3 { Scheme::Rs { k: (devices - 2).min(253) as u8, p: 2 } } else { rep };
        ClassSchemes([rep, rep, hot, Scheme::None(Placement::Isolated)])
    }

    /// One scheme for every class (the uniform baselines).
    pub fn uniform(s: Scheme) -> ClassSchemes {
        ClassSchemes([s; 4])
    }

    /// The scheme of class `c`.
    pub fn of(&self, c: Class) -> Scheme {
        self.0[c as usize]
    }

    /// Every scheme must fit the array; dirty data must survive a device loss when there are
    /// at least two devices (an acknowledged write is the only copy).
    pub fn validate(&self, devices: usize) -> Result<(), SchemeError> {
        self.validate_fit(devices)?;
        if devices >= 2 && self.of(Class::Dirty).tolerance() == 0 {
            return Err(SchemeError::UnprotectedDirty(self.of(Class::Dirty)));
        }
        Ok(())
    }

    /// Every scheme fits an array of `devices` devices (whatever it does to dirty data).
    pub fn validate_fit(&self, devices: usize) -> Result<(), SchemeError> {
        for c in Class::ALL {
            self.of(c).validate(devices).map_err(|source| SchemeError::Unfit { class: c.as_str(), source })?;
        }
        Ok(())
    }
}

/// Why a class → scheme map does not suit an array.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemeError {
    /// A class's scheme does not fit the array.
    #[error("class {class}: {source}")]
    Unfit {
        /// The class's name ([`Class::as_str`]).
        class: &'static str,
        /// Why the store refuses the scheme on this array.
        source: reo_store::Error,
    },
    /// Dirty data would not survive a device loss.
    #[error(
        "class dirty uses {0} which loses acknowledged writes when a device dies; use replicate(r ≥ 2) or rs(k, p ≥ 1)"
    )]
    UnprotectedDirty(Scheme),
}

/// The redundancy policy of a cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Redundancy {
    /// Reo: metadata and dirty data replicated on every device, hot clean data Reed-Solomon with
    /// 2 parity, cold clean data unprotected and isolated; hot objects are the hottest (by
    /// H = Freq / Size) whose redundancy fits in `budget` (a fraction of the cache capacity).
    Reo {
        /// Share of the cache capacity hot data's redundancy may use, in (0, 1) (0.2 = Reo-20%).
        budget: f64,
    },
    /// Everything striped without parity (the paper's 0-parity: fastest, any failure loses all).
    ZeroParity,
    /// Everything rs(n − 1, 1).
    OneParity,
    /// Everything rs(n − 2, 2).
    TwoParity,
    /// Everything replicated on every device.
    FullReplication,
}

impl Default for Redundancy {
    /// Reo-20%.
    fn default() -> Self {
        Redundancy::Reo { budget: 0.2 }
    }
}

impl Redundancy {
    /// The class → scheme map over `devices` devices.
    pub fn class_schemes(&self, devices: usize) -> ClassSchemes {
        let n = devices.clamp(1, 255);
        let rs = |p: usize| {
            if n > p {
                Scheme::Rs { k: (n - p) as u8, p: p as u8 }
            } else {
                Scheme::Replicate(n as u8)
            }
        };
        match self {
            Redundancy::Reo { .. } => ClassSchemes::reo_default(devices),
            Redundancy::ZeroParity => ClassSchemes::uniform(Scheme::None(Placement::Striped)),
            Redundancy::OneParity => ClassSchemes::uniform(rs(1)),
            Redundancy::TwoParity => ClassSchemes::uniform(rs(2)),
            Redundancy::FullReplication => ClassSchemes::uniform(Scheme::Replicate(n as u8)),
        }
    }

    /// The hot-class redundancy budget (Reo only).
    pub fn hot_budget(&self) -> Option<f64> {
        match self {
            Redundancy::Reo { budget } => Some(*budget),
            _ => None,
        }
    }

    /// Uniform baselines may leave dirty data unprotected (that is what they measure).
    pub fn is_baseline(&self) -> bool {
        !matches!(self, Redundancy::Reo { .. })
    }
}

impl fmt::Display for Redundancy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Redundancy::Reo { budget } => write!(f, "reo-{}%", (budget * 100.0).round()),
            Redundancy::ZeroParity => f.write_str("0-parity"),
            Redundancy::OneParity => f.write_str("1-parity"),
            Redundancy::TwoParity => f.write_str("2-parity"),
            Redundancy::FullReplication => f.write_str("full-replication"),
        }
    }
}

/// Why a string names no [`Redundancy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedundancyError {
    /// Not one of the names in the module documentation (`reo-N%` needs 0 < N < 100).
    #[error(
        "unknown redundancy {0:?} (expected reo-N% with 0 < N < 100, 0-parity, 1-parity, 2-parity or full-replication)"
    )]
    Unknown(String),
}

impl FromStr for Redundancy {
    type Err = RedundancyError;
    fn from_str(s: &str) -> Result<Self, RedundancyError> {
        let err = || RedundancyError::Unknown(s.to_string());
        match s {
            "0-parity" => Ok(Redundancy::ZeroParity),
            "1-parity" => Ok(Redundancy::OneParity),
            "2-parity" => Ok(Redundancy::TwoParity),
            "full-replication" => Ok(Redundancy::FullReplication),
            _ => {
                let pct = s.strip_prefix("reo-").and_then(|r| r.strip_suffix('%')).ok_or_else(err)?;
                let pct: f64 = pct.parse().map_err(|_| err())?;
                if !(pct > 0.0 && pct < 100.0) {
                    return Err(err());
                }
                Ok(Redundancy::Reo { budget: pct / 100.0 })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_map_to_schemes() {
        for name in ["reo-10%", "reo-20%", "reo-40%", "0-parity", "1-parity", "2-parity", "full-replication"] {
            let r: Redundancy = name.parse().unwrap();
            assert_eq!(r.to_string(), name);
        }
        assert_eq!("reo-10%".parse::<Redundancy>().unwrap().hot_budget(), Some(0.1));
        assert!("reo-0%".parse::<Redundancy>().is_err());
        assert!("raid5".parse::<Redundancy>().unwrap_err().to_string().contains("expected reo-N%"));
        let four = |r: Redundancy| r.class_schemes(4);
        assert_eq!(four(Redundancy::OneParity).of(Class::Cold), Scheme::Rs { k: 3, p: 1 });
        assert_eq!(four(Redundancy::TwoParity).of(Class::Dirty), Scheme::Rs { k: 2, p: 2 });
        assert_eq!(four(Redundancy::FullReplication).of(Class::Hot), Scheme::Replicate(4));
        assert_eq!(four(Redundancy::ZeroParity).of(Class::Hot), Scheme::None(Placement::Striped));
        assert_eq!(four(Redundancy::default()).of(Class::Hot), Scheme::Rs { k: 2, p: 2 });
        for r in [Redundancy::OneParity, Redundancy::TwoParity, Redundancy::FullReplication, Redundancy::default()] {
            for n in 1..=6 {
                for c in Class::ALL {
                    r.class_schemes(n).of(c).validate(n).unwrap();
                }
            }
        }
    }
}
