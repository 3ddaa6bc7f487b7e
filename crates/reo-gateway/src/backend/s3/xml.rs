//! The few pieces of S3's XML the bucket operations read: the buckets of a ListBuckets answer
//! (name, creation date as ns since the epoch) and the `<Code>` of an error answer. Plain string
//! scanning: these documents are flat and S3 escapes `<` in names (bucket names cannot hold it).

/// The text of the first `<tag>…</tag>` in `doc`.
pub fn element<'a>(doc: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = doc.find(&open)? + open.len();
    let len = doc[start..].find(&close)?;
    Some(&doc[start..start + len])
}

/// `(name, created_ns)` of every `<Bucket>` of a ListAllMyBucketsResult.
pub fn buckets(doc: &str) -> Vec<(String, u64)> {
    doc.split("<Bucket>")
        .skip(1)
        .filter_map(|b| {
            let name = element(b, "Name")?.to_string();
            let created = element(b, "CreationDate").and_then(parse_time).unwrap_or(0);
            Some((name, created))
        })
        .collect()
}

/// An ISO 8601 UTC time (`2026-11-23T17:31:53.000Z`, fraction optional) as ns since the epoch.
pub fn parse_time(t: &str) -> Option<u64> {
    let t = t.trim().strip_suffix('Z').or_else(|| t.trim().strip_suffix("+00:00"))?;
    let (date, time) = t.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut h = hms.split(':').map(|x| x.parse::<i64>());
    let (hh, mm, ss) = (h.next()?.ok()?, h.next()?.ok()?, h.next()?.ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3_600 + mm * 60 + ss;
    let digits: String = frac.chars().take(9).collect();
    let nanos = if digits.is_empty() { 0 } else { digits.parse::<i64>().ok()? * 10i64.pow(9 - digits.len() as u32) };
    u64::try_from(secs * 1_000_000_000 + nanos).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_buckets_answer() {
        let doc = r#"<?xml version="1.0"?><ListAllMyBucketsResult><Owner><ID>x</ID></Owner><Buckets>
            <Bucket><Name>alpha</Name><CreationDate>2026-11-23T17:31:53.250Z</CreationDate></Bucket>
            <Bucket><Name>beta</Name><CreationDate>1970-01-01T00:00:01Z</CreationDate></Bucket>
            </Buckets></ListAllMyBucketsResult>"#;
        let b = buckets(doc);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].0, "alpha");
        assert_eq!(b[0].1, 1_795_455_113_250_000_000);
        assert_eq!(b[1], ("beta".to_string(), 1_000_000_000));
        assert!(buckets("<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>").is_empty());
    }

    #[test]
    fn error_codes_and_bad_times() {
        let doc = "<Error><Code>BucketNotEmpty</Code><Message>m</Message></Error>";
        assert_eq!(element(doc, "Code"), Some("BucketNotEmpty"));
        assert_eq!(element(doc, "Resource"), None);
        assert_eq!(parse_time("2024-02-29T00:00:00Z"), Some(1_709_164_800_000_000_000));
        assert_eq!(parse_time("2024-13-01T00:00:00Z"), None);
        assert_eq!(parse_time("yesterday"), None);
    }
}
