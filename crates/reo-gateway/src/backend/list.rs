//! S3 listing semantics over a sorted sequence of entries: prefix, delimiter (an empty delimiter
//! means none), start-after / marker / continuation token, max-keys, common prefixes. Shared by
//! every backend and by the gateway's merge of the backend with unflushed writes.

use super::ListEntry;

/// One listing request.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only keys starting with this (empty: all).
    pub prefix: String,
    /// `None` or `Some("")`: no grouping.
    pub delimiter: Option<String>,
    /// Return only keys (or prefixes) strictly after this (marker, start-after or the decoded
    /// continuation token, whichever is later).
    pub after: String,
    /// Most keys and common prefixes on the page (0: an empty page, not truncated).
    pub max_keys: usize,
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    /// The objects listed, in key order.
    pub contents: Vec<ListEntry>,
    /// The common prefixes (each ending with the delimiter), in order.
    pub common_prefixes: Vec<String>,
    /// Whether more entries follow.
    pub truncated: bool,
    /// The last key or common prefix returned (the next marker / continuation) when truncated.
    pub next_after: Option<String>,
}

/// Pages `entries` (sorted by key).
pub fn page(entries: impl IntoIterator<Item = ListEntry>, q: &ListQuery) -> ListPage {
    let mut p = Pager::new(q);
    for e in entries {
        if p.push(e) {
            break;
        }
    }
    p.finish()
}

/// In a merge of sorted sources each asked for `n` keys after one cursor: the last key every
/// source has answered completely up to — the smallest last key among the sources that returned
/// all `n` (`full`; more may follow) — or `None` if none did (each answered to its end). Only
/// keys up to it may be merged in this round.
pub fn known_upto<'a>(sources: impl IntoIterator<Item = (bool, Option<&'a String>)>) -> Option<String> {
    sources.into_iter().filter_map(|(full, last)| last.filter(|_| full)).min().cloned()
}

/// A page built from entries offered one at a time in key order, so that a caller can fetch them
/// in pieces and stop as soon as the page is decided ([`Pager::push`]).
pub struct Pager<'q> {
    q: &'q ListQuery,
    delim: Option<&'q str>,
    out: ListPage,
    count: usize,
    last: Option<String>,
    /// The common prefix of the last entry offered, if it fell into one.
    group: Option<String>,
    done: bool,
}

impl<'q> Pager<'q> {
    /// An empty page of `q`.
    pub fn new(q: &'q ListQuery) -> Pager<'q> {
        let delim = q.delimiter.as_deref().filter(|d| !d.is_empty());
        Pager { q, delim, out: ListPage::default(), count: 0, last: None, group: None, done: false }
    }

    /// Entries and common prefixes on the page so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether the listing groups keys by a delimiter.
    pub fn grouped(&self) -> bool {
        self.delim.is_some()
    }

    /// The common prefix the last entry offered fell into, if any: every further key under it
    /// is skipped, so the caller may resume after the whole group.
    pub fn open_group(&self) -> Option<&str> {
        self.group.as_deref()
    }

    /// Offers the next entry; true once the page is decided (nothing more is needed).
    pub fn push(&mut self, e: ListEntry) -> bool {
        let q = self.q;
        if self.done {
            return true;
        }
        if !e.key.starts_with(&q.prefix) || e.key.as_str() <= q.after.as_str() {
            return false;
        }
        // Resuming after a common prefix: skip the rest of its keys.
        if let Some(d) = self.delim {
            if q.after.ends_with(d) && q.after.starts_with(&q.prefix) && e.key.starts_with(&q.after) {
                return false;
            }
        }
        let group = self.delim.and_then(|d| {
            let rest = &e.key[q.prefix.len()..];
            rest.find(d).map(|i| e.key[..q.prefix.len() + i + d.len()].to_string())
        });
        if let Some(g) = &group {
            if self.out.common_prefixes.last() == Some(g) {
                return false;
            }
        }
        // MaxKeys=0 asks for nothing and, as S3 answers it, is not truncated: a paginator that
        // follows IsTruncated would otherwise ask again forever (there is no token to give).
        if q.max_keys == 0 {
            self.done = true;
            return true;
        }
        if self.count == q.max_keys {
            self.out.truncated = true;
            self.out.next_after = self.last.take();
            self.done = true;
            return true;
        }
        self.count += 1;
        self.group.clone_from(&group);
        match group {
            Some(g) => {
                self.last = Some(g.clone());
                self.out.common_prefixes.push(g);
            }
            None => {
                self.last = Some(e.key.clone());
                self.out.contents.push(e);
            }
        }
        false
    }

    /// The page as built so far.
    pub fn finish(self) -> ListPage {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ObjectInfo;

    #[test]
    fn a_merge_round_is_known_up_to_the_smallest_last_key_of_a_full_source() {
        let (b, c) = ("b".to_string(), "c".to_string());
        assert_eq!(known_upto([(true, Some(&c)), (false, Some(&b)), (true, Some(&b))]), Some(b.clone()));
        assert_eq!(known_upto([(false, Some(&c)), (false, None)]), None, "every source answered to its end");
        assert_eq!(known_upto([(true, Some(&c)), (false, Some(&b))]), Some(c));
    }

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
