//! Sizes as people write them, parsed the same way everywhere Reo takes one (`reo.toml`, the
//! command line, `reo replay`, admission specs): a number, optionally with a fraction, then a
//! unit, case-insensitive, with or without a space between.
//!
//! | unit | bytes |
//! |---|---|
//! | none, `B` | 1 |
//! | `KiB`, `MiB`, `GiB`, `TiB`, and the short `K`, `M`, `G`, `T` | 2^10, 2^20, 2^30, 2^40 |
//! | `KB`, `MB`, `GB`, `TB` | 10^3, 10^6, 10^9, 10^12 |
//!
//! A fraction is rounded down to whole bytes (`1.5KiB` is 1,536). A size that does not fit in
//! 64 bits is refused.
//!
//! Durations (timeouts, delays, expiries in `reo.toml` and on the command line) are a whole
//! number and a unit, with or without a space between:
//!
//! | unit | duration |
//! |---|---|
//! | `ms` | a millisecond |
//! | `s` | a second |
//! | `m`, `min` | a minute |
//! | `h` | an hour |
//! | `d` | a day |
//!
//! There is no unitless duration (is `30` seconds or milliseconds?), and one beyond 2^64 ms is
//! refused.

/// Why a string names no size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// Not a number with an optional fraction.
    #[error("{0:?} is not a size like 4GiB, 512MiB, 10MB or 65536")]
    NotASize(String),
    /// A number, then a unit the table does not list.
    #[error("{input:?}: unknown unit {unit:?} (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)")]
    UnknownUnit {
        /// The whole string given.
        input: String,
        /// Its unit part, lower-cased.
        unit: String,
    },
    /// More bytes than 64 bits hold.
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// The number of bytes `s` names (see the module doc), or why it names none.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let bad = || SizeError::NotASize(s.to_string());
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mul: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => return Err(SizeError::UnknownUnit { input: s.to_string(), unit: other.to_string() }),
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let too_large = || SizeError::TooLarge(s.to_string());
    let mut bytes = whole.checked_mul(mul).ok_or_else(too_large)?;
    if !frac.is_empty() {
        // Exact in integers: the fraction's digits times the unit, over 10^digits.
        let digits = frac.len().min(18);
        let f: u128 = frac[..digits].parse().map_err(|_| bad())?;
        let part = f * u128::from(mul) / 10u128.pow(digits as u32);
        bytes = bytes.checked_add(u64::try_from(part).map_err(|_| too_large())?).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// Why a string names no duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// Not a whole number followed by one of the units of the module doc.
    #[error("{0:?} is not a duration like 250ms, 30s, 5m, 2h or 7d")]
    NotADuration(String),
    /// More milliseconds than 64 bits hold.
    #[error("{0:?} is too long")]
    TooLong(String),
}

/// The duration `s` names (see the module doc), or why it names none.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, DurationError> {
    let t = s.trim();
    let bad = || DurationError::NotADuration(s.to_string());
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let ms: u64 = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(ms).map(std::time::Duration::from_millis).ok_or_else(|| DurationError::TooLong(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_size, DurationError};
    use std::time::Duration;

    #[test]
    fn durations_are_a_whole_number_and_a_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration(" 5 m "), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5min"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        for bad in ["", "30", "s", "1.5s", "-1s", "3w", "30 seconds", "10S"] {
            assert_eq!(parse_duration(bad), Err(DurationError::NotADuration(bad.to_string())), "{bad:?}");
        }
        assert_eq!(
            parse_duration("18446744073709551615d"),
            Err(DurationError::TooLong("18446744073709551615d".into()))
        );
        assert!(parse_duration("18446744073709551615ms").is_ok());
    }

    #[test]
    fn binary_and_si_units_everywhere() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("4 gib"), Ok(4 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("3K"), Ok(3072));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("10mb"), Ok(10_000_000));
        assert_eq!(parse_size("2kB"), Ok(2_000));
        assert_eq!(parse_size("1TB"), Ok(1_000_000_000_000));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("0.5GB"), Ok(500_000_000));
        assert_eq!(parse_size(".25MiB"), Ok(1 << 18));
        assert_eq!(parse_size("7B"), Ok(7));
    }

    #[test]
    fn nonsense_and_overflow_are_refused() {
        for s in ["", "lots", "4 PiB", "1.2.3MB", ".", "-1", "99999999999T", "16777216TiB", "1e3"] {
            assert!(parse_size(s).is_err(), "{s:?}");
        }
        assert!(parse_size("4 PiB").unwrap_err().to_string().contains("unknown unit"));
    }
}
