//! Listings in rounds ([`super::listing`]) page exactly as one pass over the whole merged key
//! set would: random buckets of backend objects, unflushed writes and unflushed deletes, listed
//! with random prefixes, delimiters and page sizes.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::tests::Rig;
use crate::backend::list::{page, ListQuery};
use crate::backend::{Backend, ListEntry, ObjectInfo};

fn key_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "/", "c/", "a/b", "ü"]), 1..5).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn paged_listings_match_one_pass(
        in_backend in prop::collection::btree_set(key_strategy(), 0..60),
        written in prop::collection::btree_set(key_strategy(), 0..20),
        deleted in prop::collection::btree_set(key_strategy(), 0..20),
        prefix in prop::sample::select(vec!["", "a", "a/", "b", "c/"]),
        delimiter in prop::sample::select(vec![None, Some("/"), Some("b")]),
        max_keys in 1usize..7,
    ) {
        let rig = Rig::new();
        let (gw, backend) = rig.open();
        let info = |k: &str| ObjectInfo { size: k.len() as u64, etag: format!("e-{k}"), ..Default::default() };
        let mut model: BTreeMap<String, ObjectInfo> = BTreeMap::new();
        for k in &in_backend {
            backend.put("bkt", k, k.as_bytes(), &info(k)).unwrap();
            model.insert(k.clone(), info(k));
        }
        for k in &written {
            let got = gw.put("bkt", k, k.as_bytes(), ObjectInfo::default()).unwrap();
            model.insert(k.clone(), got);
        }
        for k in &deleted {
            gw.delete("bkt", k).unwrap();
            model.remove(k);
        }
        let all: Vec<ListEntry> = model.into_iter().map(|(key, info)| ListEntry { key, info }).collect();
        let mut q = ListQuery {
            prefix: prefix.to_string(),
            delimiter: delimiter.map(str::to_string),
            after: String::new(),
            max_keys,
        };
        for _ in 0..200 {
            let want = page(all.clone(), &q);
            let got = gw.list("bkt", &q).unwrap();
            let keys = |p: &crate::backend::list::ListPage| p.contents.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
            prop_assert_eq!(keys(&got), keys(&want));
            prop_assert_eq!(&got.common_prefixes, &want.common_prefixes);
            prop_assert_eq!((got.truncated, &got.next_after), (want.truncated, &want.next_after));
            for (g, w) in got.contents.iter().zip(&want.contents) {
                prop_assert_eq!(&g.info.etag, &w.info.etag, "the pending copy wins");
            }
            match got.next_after {
                Some(a) if got.truncated => q.after = a,
                _ => break,
            }
        }
    }
}
