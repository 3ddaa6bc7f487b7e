//! Deterministic workload generators: [`GenSpec`] (which generator, which preset, which knobs —
//! parsed from `KIND[:PRESET][,KEY=VALUE]…` or built in code) and [`Workload`], the iterator of
//! exactly [`GenSpec::requests`] requests it builds. Same spec, same requests, on every machine.

mod blocks;
mod dedup;
mod dist;
mod error;
mod knob;
mod lifespan;
mod medisyn;
mod oltp;
mod scan;

pub use dedup::{DedupBlocks, DedupParams};
pub use dist::{lognormal_sizes, zipf_trace, Zipf};
pub use error::GenError;
pub use medisyn::{Medisyn, MedisynParams};
pub use oltp::{Oltp, OltpParams};
pub use scan::{ScanMix, ScanParams};

use crate::request::Request;
use std::fmt;
use std::str::FromStr;

/// A generator and its knobs.
#[derive(Debug, Clone, PartialEq)]
pub enum GenSpec {
    /// The MediSyn-like object workload of the Reo paper (docs/REFERENCES.md §A9).
    Medisyn(MedisynParams),
    /// Block workload with duplicate content (FIU IODedup-like).
    Dedup(DedupParams),
    /// Random hot-set I/O mixed with a sequential scan.
    Scan(ScanParams),
    /// SDCC-like skewed OLTP block I/O.
    Oltp(OltpParams),
}

impl GenSpec {
    /// Generator names, as in `KIND[:PRESET]`.
    pub const KINDS: [&'static str; 4] = ["medisyn", "dedup", "scan", "oltp"];

    /// The presets of generator `kind` (the first is its default).
    pub fn presets(kind: &str) -> Option<&'static [&'static str]> {
        match kind {
            "medisyn" => Some(&MedisynParams::PRESETS),
            "dedup" => Some(&DedupParams::PRESETS),
            "scan" => Some(&ScanParams::PRESETS),
            "oltp" => Some(&OltpParams::PRESETS),
            _ => None,
        }
    }

    /// Generator `kind` with `preset` (its first preset when `None`).
    pub fn preset(kind: &str, preset: Option<&str>) -> Result<GenSpec, GenError> {
        let presets = Self::presets(kind)
            .ok_or_else(|| GenError::UnknownGenerator { kind: kind.into(), expected: Self::KINDS.join(", ") })?;
        let name = preset.unwrap_or(presets[0]);
        let spec = match kind {
            "medisyn" => MedisynParams::preset(name).map(GenSpec::Medisyn),
            "dedup" => DedupParams::preset(name).map(GenSpec::Dedup),
            "scan" => ScanParams::preset(name).map(GenSpec::Scan),
            _ => OltpParams::preset(name).map(GenSpec::Oltp),
        };
        spec.ok_or_else(|| GenError::UnknownPreset {
            kind: kind.into(),
            name: name.into(),
            presets: presets.join(", "),
        })
    }

    /// The generator's name (one of [`GenSpec::KINDS`]).
    pub fn kind(&self) -> &'static str {
        match self {
            GenSpec::Medisyn(_) => "medisyn",
            GenSpec::Dedup(_) => "dedup",
            GenSpec::Scan(_) => "scan",
            GenSpec::Oltp(_) => "oltp",
        }
    }

    /// Sets knob `key` (see `docs/TRACES.md` for each generator's knobs and ranges).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), GenError> {
        let key = key.trim().replace('-', "_");
        match self {
            GenSpec::Medisyn(p) => p.set(&key, value),
            GenSpec::Dedup(p) => p.set(&key, value),
            GenSpec::Scan(p) => p.set(&key, value),
            GenSpec::Oltp(p) => p.set(&key, value),
        }
    }

    /// Every knob and its value, in a fixed order.
    pub fn knobs(&self) -> Vec<(&'static str, String)> {
        match self {
            GenSpec::Medisyn(p) => p.knobs(),
            GenSpec::Dedup(p) => p.knobs(),
            GenSpec::Scan(p) => p.knobs(),
            GenSpec::Oltp(p) => p.knobs(),
        }
    }

    /// The number of requests the workload will yield.
    pub fn requests(&self) -> u64 {
        match self {
            GenSpec::Medisyn(p) => p.requests,
            GenSpec::Dedup(p) => p.requests,
            GenSpec::Scan(p) => p.requests,
            GenSpec::Oltp(p) => p.requests,
        }
    }

    /// Checks knobs that constrain each other.
    pub fn validate(&self) -> Result<(), GenError> {
        match self {
            GenSpec::Medisyn(p) => p.validate(),
            _ => Ok(()),
        }
    }

    /// The workload (allocates the generator's tables: popularity CDF, permutation, per-object
    /// state — O(objects or blocks), never O(requests)).
    pub fn build(&self) -> Result<Workload, GenError> {
        self.validate()?;
        Ok(match self {
            GenSpec::Medisyn(p) => Workload::Medisyn(Medisyn::new(p)),
            GenSpec::Dedup(p) => Workload::Dedup(DedupBlocks::new(p)),
            GenSpec::Scan(p) => Workload::Scan(ScanMix::new(p)),
            GenSpec::Oltp(p) => Workload::Oltp(Oltp::new(p)),
        })
    }
}

/// `KIND[:PRESET][,KEY=VALUE]…`, e.g. `medisyn:strong,alpha=1.1,seed=7`.
impl FromStr for GenSpec {
    type Err = GenError;

    fn from_str(s: &str) -> Result<Self, GenError> {
        let mut parts = s.split(',');
        let head = parts.next().unwrap_or("").trim();
        let (kind, preset) = match head.split_once(':') {
            Some((k, p)) => (k.trim(), Some(p.trim())),
            None => (head, None),
        };
        let mut spec = GenSpec::preset(kind, preset)?;
        for kv in parts.map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| GenError::NotKeyValue(kv.into()))?;
            spec.set(k, v)?;
        }
        spec.validate()?;
        Ok(spec)
    }
}

/// The canonical spec string: the kind and every knob (no preset: the knobs say it all), which
/// parses back to an equal spec.
impl fmt::Display for GenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())?;
        for (k, v) in self.knobs() {
            write!(f, ",{k}={v}")?;
        }
        Ok(())
    }
}

/// A generator built from a [`GenSpec`]: an iterator of exactly as many requests as the spec
/// says ([`ExactSizeIterator`]).
pub enum Workload {
    /// A [`GenSpec::Medisyn`] workload.
    Medisyn(Medisyn),
    /// A [`GenSpec::Dedup`] workload.
    Dedup(DedupBlocks),
    /// A [`GenSpec::Scan`] workload.
    Scan(ScanMix),
    /// A [`GenSpec::Oltp`] workload.
    Oltp(Oltp),
}

impl Iterator for Workload {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        match self {
            Workload::Medisyn(g) => g.next(),
            Workload::Dedup(g) => g.next(),
            Workload::Scan(g) => g.next(),
            Workload::Oltp(g) => g.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Workload::Medisyn(g) => g.size_hint(),
            Workload::Dedup(g) => g.size_hint(),
            Workload::Scan(g) => g.size_hint(),
            Workload::Oltp(g) => g.size_hint(),
        }
    }
}

impl ExactSizeIterator for Workload {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_strings_parse_and_roundtrip() {
        let s: GenSpec = "medisyn:strong,alpha=1.1,seed=7".parse().unwrap();
        let GenSpec::Medisyn(p) = &s else { panic!("{s:?}") };
        assert_eq!((p.requests, p.alpha, p.seed), (89_723, 1.1, 7));
        assert_eq!(s.to_string().parse::<GenSpec>().unwrap(), s);
        for kind in GenSpec::KINDS {
            for preset in GenSpec::presets(kind).unwrap() {
                let spec = GenSpec::preset(kind, Some(preset)).unwrap();
                assert_eq!(spec.to_string().parse::<GenSpec>().unwrap(), spec, "{kind}:{preset}");
            }
            assert_eq!(kind.parse::<GenSpec>().unwrap().kind(), kind);
        }
    }

    #[test]
    fn bad_specs_are_explained() {
        assert!("zipf".parse::<GenSpec>().unwrap_err().to_string().contains("unknown generator"));
        assert!("medisyn:huge".parse::<GenSpec>().unwrap_err().to_string().contains("weak, medium, strong"));
        assert!("oltp,read_ratio".parse::<GenSpec>().unwrap_err().to_string().contains("KEY=VALUE"));
        assert!("scan,alpha=x".parse::<GenSpec>().unwrap_err().to_string().contains("bad number"));
    }

    #[test]
    fn workloads_yield_exactly_the_requested_count() {
        for spec in
            ["medisyn:weak,requests=1234", "dedup:mail,requests=999,blocks=5000", "scan,requests=10", "oltp,requests=0"]
        {
            let spec: GenSpec = spec.parse().unwrap();
            let w = spec.build().unwrap();
            assert_eq!(w.len() as u64, spec.requests());
            assert_eq!(w.count() as u64, spec.requests());
        }
    }
}
