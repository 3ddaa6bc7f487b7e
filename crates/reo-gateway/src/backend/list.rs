//! S3 listing semantics over a sorted sequence of entries: prefix, delimiter (an empty delimiter
//! means none), start-after / marker / continuation token, max-keys, common prefixes. Shared by
//! every backend and by the gateway's merge of the backend with unflushed writes.

use super::ListEntry;

/// One listing request.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub prefix: String,
    /// `None` or `Some("")`: no grouping.
    pub delimiter: Option<String>,
    /// Return only keys (or prefixes) strictly after this (marker, start-after or the decoded
    /// continuation token, whichever is later).
    pub after: String,
    pub max_keys: usize,
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    pub contents: Vec<ListEntry>,
    pub common_prefixes: Vec<String>,
    pub truncated: bool,
    /// The last key or common prefix returned (the next marker / continuation) when truncated.
    pub next_after: Option<String>,
}

/// Pages `entries` (sorted by key, all starting with the prefix, all after `q.after`).
pub fn page(entries: impl IntoIterator<Item = ListEntry>, q: &ListQuery) -> ListPage {
    let delim = q.delimiter.as_deref().filter(|d| !d.is_empty());
    let mut out = ListPage::default();
    let mut count = 0usize;
    let mut last: Option<String> = None;
    for e in entries {
        if !e.key.starts_with(&q.prefix) || e.key.as_str() <= q.after.as_str() {
            continue;
        }
        // Resuming after a common prefix: skip the rest of its keys.
        if let Some(d) = delim {
            if q.after.ends_with(d) && q.after.starts_with(&q.prefix) && e.key.starts_with(&q.after) {
                continue;
            }
        }
        let group = delim.and_then(|d| {
            let rest = &e.key[q.prefix.len()..];
            rest.find(d).map(|i| e.key[..q.prefix.len() + i + d.len()].to_string())
        });
        if let Some(g) = &group {
            if out.common_prefixes.last() == Some(g) {
                continue;
            }
        }
        // MaxKeys=0 asks for nothing and, as S3 answers it, is not truncated: a paginator that
        // follows IsTruncated would otherwise ask again forever (there is no token to give).
        if q.max_keys == 0 {
            return out;
        }
        if count == q.max_keys {
            out.truncated = true;
            out.next_after = last;
            return out;
        }
        count += 1;
        match group {
            Some(g) => {
                last = Some(g.clone());
                out.common_prefixes.push(g);
            }
            None => {
                last = Some(e.key.clone());
                out.contents.push(e);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ObjectInfo;

    fn entries(keys: &[&str]) -> Vec<ListEntry> {
        keys.iter().map(|k| ListEntry { key: k.to_string(), info: ObjectInfo::default() }).collect()
    }

    fn keys(p: &ListPage) -> Vec<&str> {
        p.contents.iter().map(|e| e.key.as_str()).collect()
    }

    const ALL: &[&str] = &["a", "a/b", "a/c/d", "b", "c/x", "c/y", "d"];

    #[test]
    fn delimiter_groups_and_empty_delimiter_does_not() {
        let q = ListQuery { delimiter: Some("/".into()), max_keys: 1000, ..Default::default() };
        let p = page(entries(ALL), &q);
        assert_eq!(keys(&p), ["a", "b", "d"]);
        assert_eq!(p.common_prefixes, ["a/", "c/"]);
        let q = ListQuery { delimiter: Some(String::new()), max_keys: 1000, ..Default::default() };
        assert_eq!(page(entries(ALL), &q).contents.len(), ALL.len());
    }

    #[test]
    fn prefix_and_nested_groups() {
        let q = ListQuery { prefix: "a/".into(), delimiter: Some("/".into()), max_keys: 1000, ..Default::default() };
        let p = page(entries(ALL), &q);
        assert_eq!(keys(&p), ["a/b"]);
        assert_eq!(p.common_prefixes, ["a/c/"]);
    }

    #[test]
    fn paging_visits_everything_once() {
        for max in 1..=4 {
            let mut q = ListQuery { delimiter: Some("/".into()), max_keys: max, ..Default::default() };
            let mut seen = Vec::new();
            loop {
                let p = page(entries(ALL), &q);
                seen.extend(p.contents.iter().map(|e| e.key.clone()));
                seen.extend(p.common_prefixes.iter().cloned());
                assert!(p.contents.len() + p.common_prefixes.len() <= max);
                if !p.truncated {
                    break;
                }
                q.after = p.next_after.unwrap();
            }
            seen.sort();
            assert_eq!(seen, ["a", "a/", "b", "c/", "d"], "max {max}");
        }
    }

    #[test]
    fn start_after_and_max_keys_zero() {
        let q = ListQuery { after: "b".into(), max_keys: 1000, ..Default::default() };
        assert_eq!(keys(&page(entries(ALL), &q)), ["c/x", "c/y", "d"]);
        let q = ListQuery { max_keys: 0, ..Default::default() };
        let p = page(entries(ALL), &q);
        assert!(p.contents.is_empty() && p.common_prefixes.is_empty() && !p.truncated);
    }
}
