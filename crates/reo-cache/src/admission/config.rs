//! Admission configuration: the stable policy names and the option string that builds an
//! [`Admitter`].
//!
//! Syntax: `<kind>[,<option>=<value>]*`, e.g. `sseqr+tc,l=8MiB,budget=2TiB` or
//! `watchlist,dwpd=0.5,capacity=4TiB`. Kinds ([`AdmissionKind`]): `aa`, `seqr`, `sseqr`, `tc`,
//! `seqr+tc`, `sseqr+tc`, `watchlist`. Options (sizes take an optional binary suffix `k`/`kib`,
//! `m`/`mib`, `g`/`gib`, `t`/`tib`, case-insensitive):
//!
//! | option | meaning | default |
//! |---|---|---|
//! | `budget=<size>` | write budget in bytes per day (adds a [`WriteBudget`] stage, last) | none |
//! | `dwpd=<f>`, `capacity=<size>` | budget as drive writes per day × capacity (both needed) | none |
//! | `burst=<size>` | budget token bucket | 1 min of budget, ≥ 4 MiB |
//! | `dynamic=<bool>` | DynamicRandomAP under the hard cap | true |
//! | `seed=<u64>` | seed of the budget's draws | 0 |
//! | `window=<n>`, `gap=<size>`, `min_run=<n>` | stream detection ([`SeqrConfig`]) | 32, 64 KiB, 4 |
//! | `l=<size>`, `pressure=<f>` | SSEQR limit and occupancy gate | 4 MiB, 0 |
//! | `n=<touches>` | TC threshold ([`TcConfig`]) | 2 |
//! | `hits=<n>` | watchlist pseudo-hits to be hot ([`WatchlistConfig`]) | 3 |
//!
//! Stages run cheap → expensive: sequential filter, then TC, then the watchlist, then the budget.

use std::fmt;
use std::str::FromStr;

use super::{
    Admission, AdmitAll, Admitter, BudgetConfig, Chain, Seqr, SeqrConfig, Sseqr, TcConfig, TouchCount, Watchlist,
    WatchlistConfig, WriteBudget,
};

/// The admission policies by stable name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdmissionKind {
    /// `aa`: admit every candidate write.
    AdmitAll,
    /// `seqr`: reject requests of detected sequential streams ([`Seqr`]).
    Seqr,
    /// `sseqr`: admit only the first L bytes of each sequential stream ([`Sseqr`]).
    Sseqr,
    /// `tc`: admit a segment only after enough recent touches ([`TouchCount`]).
    Tc,
    /// `seqr+tc`: SEQR, then touch count.
    SeqrTc,
    /// `sseqr+tc`: SSEQR, then touch count.
    SseqrTc,
    /// `watchlist`: SDCC's shadow watchlist with utility-based promotion ([`Watchlist`]).
    Watchlist,
}

impl AdmissionKind {
    /// Every kind, in a stable order.
    pub const ALL: [AdmissionKind; 7] = [
        AdmissionKind::AdmitAll,
        AdmissionKind::Seqr,
        AdmissionKind::Sseqr,
        AdmissionKind::Tc,
        AdmissionKind::SeqrTc,
        AdmissionKind::SseqrTc,
        AdmissionKind::Watchlist,
    ];

    /// Stable name, as parsed by [`FromStr`] (`aa`, `seqr`, `sseqr+tc`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionKind::AdmitAll => "aa",
            AdmissionKind::Seqr => "seqr",
            AdmissionKind::Sseqr => "sseqr",
            AdmissionKind::Tc => "tc",
            AdmissionKind::SeqrTc => "seqr+tc",
            AdmissionKind::SseqrTc => "sseqr+tc",
            AdmissionKind::Watchlist => "watchlist",
        }
    }
}

impl fmt::Display for AdmissionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Why an admission string did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmissionConfigError {
    /// The kind (before the first `,`) is not one of [`AdmissionKind::ALL`].
    UnknownKind(String),
    /// An option name the module documentation's table does not list, or an option without `=`.
    UnknownOption(String),
    /// An option whose value does not parse (a size, integer, finite non-negative float or bool).
    BadValue {
        /// The option's name.
        option: String,
        /// The value as given.
        value: String,
    },
    /// `dwpd` without `capacity` or the reverse.
    DwpdNeedsCapacity,
}

impl fmt::Display for AdmissionConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdmissionConfigError::UnknownKind(s) => {
                let names: Vec<_> = AdmissionKind::ALL.iter().map(|k| k.as_str()).collect();
                write!(f, "unknown admission policy {s:?} (expected one of {})", names.join(", "))
            }
            AdmissionConfigError::UnknownOption(s) => write!(
                f,
                "unknown admission option {s:?} (expected budget, dwpd, capacity, burst, dynamic, seed, window, \
                 gap, min_run, l, pressure, n or hits)"
            ),
            AdmissionConfigError::BadValue { option, value } => {
                write!(f, "bad value {value:?} for admission option {option:?}")
            }
            AdmissionConfigError::DwpdNeedsCapacity => f.write_str("admission options dwpd and capacity go together"),
        }
    }
}

impl std::error::Error for AdmissionConfigError {}

impl FromStr for AdmissionKind {
    type Err = AdmissionConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AdmissionKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| AdmissionConfigError::UnknownKind(s.to_string()))
    }
}

/// A full admission configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionConfig {
    /// Which policy (stages) to build.
    pub kind: AdmissionKind,
    /// Stream detection, shared by SEQR and SSEQR.
    pub seqr: SeqrConfig,
    /// SSEQR's L in bytes.
    pub sseqr_limit: u64,
    /// SSEQR's occupancy gate (0 = always reject past L).
    pub sseqr_pressure: f64,
    /// Touch-count filter parameters (used by the `tc` kinds).
    pub tc: TcConfig,
    /// Watchlist parameters (used by the `watchlist` kind).
    pub watchlist: WatchlistConfig,
    /// Write budget, run as the last stage; `None` = no budget.
    pub budget: Option<BudgetConfig>,
}

impl AdmissionConfig {
    /// `kind` with every default and no budget.
    pub fn new(kind: AdmissionKind) -> Self {
        AdmissionConfig {
            kind,
            seqr: SeqrConfig::default(),
            sseqr_limit: Sseqr::DEFAULT_LIMIT,
            sseqr_pressure: 0.0,
            tc: TcConfig::default(),
            watchlist: WatchlistConfig::default(),
            budget: None,
        }
    }

    /// Builds the stages (cheap → expensive, budget last) behind a stats-keeping [`Admitter`].
    pub fn build(&self) -> Admitter {
        let mut stages: Vec<Box<dyn Admission>> = Vec::new();
        let sseqr = || Box::new(Sseqr::new(self.seqr, self.sseqr_limit, self.sseqr_pressure));
        let tc = || Box::new(TouchCount::new(self.tc));
        match self.kind {
            AdmissionKind::AdmitAll => {}
            AdmissionKind::Seqr => stages.push(Box::new(Seqr::new(self.seqr))),
            AdmissionKind::Sseqr => stages.push(sseqr()),
            AdmissionKind::Tc => stages.push(tc()),
            AdmissionKind::SeqrTc => stages.extend([Box::new(Seqr::new(self.seqr)) as Box<dyn Admission>, tc()]),
            AdmissionKind::SseqrTc => stages.extend([sseqr() as Box<dyn Admission>, tc()]),
            AdmissionKind::Watchlist => stages.push(Box::new(Watchlist::new(self.watchlist))),
        }
        if let Some(b) = self.budget {
            stages.push(Box::new(WriteBudget::new(b)));
        }
        match stages.len() {
            0 => Admitter::new(Box::new(AdmitAll)),
            1 => Admitter::new(stages.pop().expect("one stage")),
            _ => Admitter::new(Box::new(Chain::new(stages))),
        }
    }
}

impl FromStr for AdmissionConfig {
    type Err = AdmissionConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(',');
        let mut c = AdmissionConfig::new(parts.next().unwrap_or("").trim().parse()?);
        let (mut per_day, mut dwpd, mut capacity) = (None, None, None);
        let (mut burst, mut dynamic, mut seed) = (None, None, None);
        for opt in parts {
            let (k, v) = opt.split_once('=').ok_or_else(|| AdmissionConfigError::UnknownOption(opt.to_string()))?;
            let (k, v) = (k.trim(), v.trim());
            let bad = || AdmissionConfigError::BadValue { option: k.to_string(), value: v.to_string() };
            let size = || crate::units::parse_size(v).map_err(|_| bad());
            let int = || v.parse::<u64>().map_err(|_| bad());
            let float = || v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(bad);
            match k {
                "budget" => per_day = Some(size()?),
                "dwpd" => dwpd = Some(float()?),
                "capacity" => capacity = Some(size()?),
                "burst" => burst = Some(size()?),
                "dynamic" => dynamic = Some(v.parse::<bool>().map_err(|_| bad())?),
                "seed" => seed = Some(int()?),
                "window" => c.seqr.window = int()?.max(1) as usize,
                "gap" => c.seqr.gap = size()?,
                "min_run" => c.seqr.min_run = u32::try_from(int()?).map_err(|_| bad())?,
                "l" => c.sseqr_limit = size()?,
                "pressure" => c.sseqr_pressure = float()?,
                "n" => c.tc.threshold = u32::try_from(int()?).map_err(|_| bad())?,
                "hits" => c.watchlist.min_hits = u32::try_from(int()?).map_err(|_| bad())?,
                _ => return Err(AdmissionConfigError::UnknownOption(k.to_string())),
            }
        }
        let mut budget = match (per_day, dwpd, capacity) {
            (Some(b), None, None) => Some(BudgetConfig::per_day(b)),
            (None, Some(d), Some(cap)) => Some(BudgetConfig::dwpd(d, cap)),
            (None, None, None) => None,
            (Some(_), ..) => return Err(AdmissionConfigError::UnknownOption("budget together with dwpd".into())),
            _ => return Err(AdmissionConfigError::DwpdNeedsCapacity),
        };
        if let Some(b) = &mut budget {
            b.burst_bytes = burst.unwrap_or(b.burst_bytes);
            b.dynamic = dynamic.unwrap_or(b.dynamic);
            b.seed = seed.unwrap_or(b.seed);
        }
        c.budget = budget;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Decision, Reason, Request, Throttle};

    #[test]
    fn kinds_round_trip_and_unknown_names_are_clear_errors() {
        for k in AdmissionKind::ALL {
            assert_eq!(k.as_str().parse::<AdmissionKind>(), Ok(k));
            let c: AdmissionConfig = k.as_str().parse().unwrap();
            assert_eq!(c, AdmissionConfig::new(k));
            assert_eq!(c.build().name(), if k == AdmissionKind::AdmitAll { "aa" } else { k.as_str() });
        }
        let e = "SEQR".parse::<AdmissionConfig>().unwrap_err();
        assert_eq!(e, AdmissionConfigError::UnknownKind("SEQR".into()));
        let msg = e.to_string();
        assert!(msg.contains("\"SEQR\"") && msg.contains("sseqr+tc") && msg.contains("watchlist"), "{msg}");
        assert!(
            matches!("tc,foo=1".parse::<AdmissionConfig>(), Err(AdmissionConfigError::UnknownOption(o)) if o == "foo")
        );
        assert!(matches!("tc,n".parse::<AdmissionConfig>(), Err(AdmissionConfigError::UnknownOption(_))));
        assert!(matches!("tc,budget=12x".parse::<AdmissionConfig>(), Err(AdmissionConfigError::BadValue { .. })));
        assert_eq!("aa,dwpd=1".parse::<AdmissionConfig>(), Err(AdmissionConfigError::DwpdNeedsCapacity));
        assert!("".parse::<AdmissionConfig>().is_err());
    }

    #[test]
    fn options_set_parameters_and_the_budget_goes_last() {
        let c: AdmissionConfig =
            "sseqr+tc, l=8MiB, n=3, window=4, gap=0, min_run=2, budget=2TiB, burst=1g, seed=7".parse().unwrap();
        assert_eq!(c.sseqr_limit, 8 << 20);
        assert_eq!((c.tc.threshold, c.seqr.window, c.seqr.gap, c.seqr.min_run), (3, 4, 0, 2));
        let b = c.budget.unwrap();
        assert_eq!((b.bytes_per_day, b.burst_bytes, b.seed, b.dynamic), (2 << 40, 1 << 30, 7, true));
        assert_eq!(c.build().name(), "sseqr+tc+budget");
        let d: AdmissionConfig = "watchlist,dwpd=0.5,capacity=4t,dynamic=false,hits=5".parse().unwrap();
        assert_eq!(d.budget.unwrap().bytes_per_day, 2 << 40);
        assert!(!d.budget.unwrap().dynamic);
        assert_eq!(d.watchlist.min_hits, 5);
        assert_eq!(d.build().name(), "watchlist+budget");
    }

    #[test]
    fn built_chain_decides_and_counts() {
        // seqr+tc with a 1-byte-per-second budget of burst 10: hand-checked decisions.
        let mut a = "seqr+tc,min_run=2,budget=86400,burst=10,dynamic=false".parse::<AdmissionConfig>().unwrap().build();
        let r = |key, off, len| Request::read_miss(key, off, len, 0);
        assert_eq!(a.decide(&r(1, 0, 6)), Decision::Reject(Reason::Cold), "tc: first touch");
        assert_eq!(a.decide(&r(1, 6, 6)), Decision::Reject(Reason::Sequential), "seqr: continues key 1");
        assert_eq!(a.decide(&r(1, 0, 6)), Decision::Admit, "tc: second touch; 6 of 10 bytes");
        assert_eq!(a.decide(&r(1, 0, 6)), Decision::Throttled(Throttle::Cap), "4 bytes left");
        let s = a.stats();
        assert_eq!((s.requests, s.admitted, s.rejected, s.throttled), (4, 1, 2, 1));
        assert_eq!((s.rejected_by.cold, s.rejected_by.sequential, s.throttled_by.cap), (1, 1, 1));
    }
}
