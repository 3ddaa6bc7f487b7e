//! Tests of CompleteMultipartUpload ([`super::complete`]): a completion stopped after each of its
//! steps and the gateway's state reopened over the same devices and state directory (a crash),
//! two completions of one upload at once (the first held at a gate of the counting backend
//! double), and S3's answers for an upload once it is completed. No sleeps.

use std::sync::Arc;

use md5::{Digest, Md5};
use s3s::S3ErrorCode;

use super::handle::Gateway;
use super::multipart::Step;
use super::tests::Rig;
use crate::backend::ObjectInfo;

const MAX: u64 = 1 << 30;

/// The first part: every part but the last is at least 5 MiB.
fn part1() -> Vec<u8> {
    (0..5u32 << 20).map(|i| (i % 251) as u8).collect()
}

/// The whole object of parts 1 and 2.
fn whole() -> Vec<u8> {
    [part1().as_slice(), b"second part"].concat()
}

/// An upload of `bkt/mp` with two parts; its id and (number, ETag) parts.
fn upload(gw: &Gateway) -> (String, Vec<(i32, String)>) {
    let id =
        gw.uploads.create("bkt", "mp", ObjectInfo { content_type: "a/b".into(), ..Default::default() }, None).unwrap();
    let u = gw.uploads.get("bkt", "mp", &id).unwrap();
    let e1 = gw.uploads.put_part(&u, 1, &part1()).unwrap().0;
    let e2 = gw.uploads.put_part(&u, 2, b"second part").unwrap().0;
    (id, vec![(1, e1), (2, e2)])
}

/// S3's ETag of a multipart object made of these parts.
fn etag_of(parts: &[&[u8]]) -> String {
    let md5s: Vec<u8> = parts.iter().flat_map(|p| Md5::digest(p).to_vec()).collect();
    format!("{}-{}", crate::keys::md5_hex(&md5s), parts.len())
}

fn body(gw: &Gateway) -> Vec<u8> {
    let _r = gw.read_lock("bkt", "mp");
    let i = gw.head("bkt", "mp").unwrap();
    gw.read("bkt", "mp", &i, 0, i.size).unwrap()
}

/// The part files left in the upload's staging directory.
fn staged(rig: &Rig, id: &str) -> Vec<String> {
    let d = rig.dir.join("state").join("uploads").join(id);
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("part-"))
        .collect();
    names.sort();
    names
}

/// A completion stops after `step` (the process dies); the restarted gateway completes it again.
fn crash_then_repeat(step: Step) {
    let rig = Rig::new();
    let (id, parts) = {
        let (gw, _) = rig.open();
        let (id, parts) = upload(&gw);
        *gw.uploads.crash_after.lock() = Some(step);
        let err = gw.complete_upload("bkt", "mp", &id, &parts, MAX).unwrap_err();
        assert!(err.message().unwrap_or_default().contains("simulated crash"), "{err:?}");
        gw.cache.store().flush().unwrap();
        (id, parts)
    };
    let (gw, _) = rig.open();
    // The restarted gateway flushes what the first run stored (else the repeat's write, with the
    // stored copy still dirty, would exceed this small cache's dirty budget).
    assert!(!super::flusher::round(&gw));
    if step == Step::Recorded {
        assert!(staged(&rig, &id).is_empty(), "the start-up removed the parts of a recorded completion");
    }
    // Regression: the parts were removed before the answer was written; a crash in between left
    // neither, and the repeated completion failed with InvalidPart.
    let want = etag_of(&[&part1(), b"second part"]);
    let info = gw.complete_upload("bkt", "mp", &id, &parts, MAX).unwrap();
    assert_eq!(info.etag, want);
    assert_eq!(body(&gw), whole());
    assert!(staged(&rig, &id).is_empty(), "the parts are removed once the answer is recorded");
    assert_eq!(gw.complete_upload("bkt", "mp", &id, &parts, MAX).unwrap().etag, want);
    assert!(gw.uploads.list("bkt", "").is_empty(), "a completed upload is not listed");
}

#[test]
fn a_completion_interrupted_after_storing_the_object_completes_when_repeated() {
    crash_then_repeat(Step::Stored);
}

#[test]
fn a_completion_interrupted_after_recording_its_answer_answers_the_same_when_repeated() {
    crash_then_repeat(Step::Recorded);
}

#[test]
fn two_completions_of_one_upload_at_once_answer_the_same_and_write_once() {
    let rig = Rig::new();
    let (gw, _, counting) = rig.open_counting();
    let (id, parts) = upload(&gw);
    let complete = |gw: &Arc<Gateway>| {
        let (gw, id, parts) = (gw.clone(), id.clone(), parts.clone());
        std::thread::spawn(move || gw.complete_upload("bkt", "mp", &id, &parts, MAX))
    };
    // The first is writing the object (its bucket check is held); the second is queued behind it.
    counting.after_head_bucket.set(false);
    let first = complete(&gw);
    counting.after_head_bucket.wait_reached(1);
    let second = complete(&gw);
    gw.uploads.wait_queued(&id, 2);
    counting.after_head_bucket.set(true);
    let (a, b) = (first.join().unwrap(), second.join().unwrap());
    // Regression: the second read parts the first was removing (a 500), or wrote the object again.
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.etag, b.etag);
    assert_eq!(a.etag, etag_of(&[&part1(), b"second part"]));
    assert_eq!(counting.after_head_bucket.reached(), 1, "the object was written once");
    assert_eq!(body(&gw), whole());
}

#[test]
fn a_completed_upload_answers_as_s3_does() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let (id, parts) = upload(&gw);
    let only_second = vec![parts[1].clone()];
    let info = gw.complete_upload("bkt", "mp", &id, &only_second, MAX).unwrap();
    assert_eq!(info.etag, etag_of(&[b"second part"]));
    // The same list again, quoted as clients send it: the same answer.
    let quoted: Vec<(i32, String)> = only_second.iter().map(|(n, e)| (*n, format!("\"{e}\""))).collect();
    assert_eq!(gw.complete_upload("bkt", "mp", &id, &quoted, MAX).unwrap().etag, info.etag);
    // Another list: the upload no longer exists (S3: "may have been aborted or completed").
    let err = gw.complete_upload("bkt", "mp", &id, &parts, MAX).unwrap_err();
    assert_eq!(*err.code(), S3ErrorCode::NoSuchUpload);
    // Nor can it take parts, list them or be aborted.
    assert_eq!(*gw.uploads.get("bkt", "mp", &id).unwrap_err().code(), S3ErrorCode::NoSuchUpload);
    assert_eq!(*gw.uploads.abort("bkt", "mp", &id).unwrap_err().code(), S3ErrorCode::NoSuchUpload);
    assert_eq!(body(&gw), b"second part");
    // Another object's name with this id: NoSuchUpload too.
    let err = gw.complete_upload("bkt", "other", &id, &only_second, MAX).unwrap_err();
    assert_eq!(*err.code(), S3ErrorCode::NoSuchUpload);
}

#[test]
fn abandoned_uploads_expire_and_completed_ones_stay() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let (abandoned, _) = upload(&gw);
    let (completed, parts) = upload(&gw);
    let info = gw.complete_upload("bkt", "mp", &completed, &parts, MAX).unwrap();
    let now = super::now_ns();
    let day = std::time::Duration::from_secs(86_400);
    assert_eq!(gw.uploads.expire(day, now), 0, "nothing is a day old");
    // A week later: the abandoned upload and its parts go; the completed one's answer stays.
    assert_eq!(gw.uploads.expire(day, now + 7 * day.as_nanos() as u64), 1);
    assert_eq!(*gw.uploads.get("bkt", "mp", &abandoned).unwrap_err().code(), S3ErrorCode::NoSuchUpload);
    assert!(!rig.dir.join("state").join("uploads").join(&abandoned).exists());
    assert_eq!(gw.complete_upload("bkt", "mp", &completed, &parts, MAX).unwrap().etag, info.etag);
}
