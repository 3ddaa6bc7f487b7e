//! The Reo paper's control-object messages, §IV.C.2 (docs/REFERENCES.md §P1), with objects
//! addressed by key:
//!
//! * `#SETID# <pid> <oid> <cid>` — classification: sets the class of object `pid/oid` (bucket
//!   and key) to `cid` ∈ {0 metadata, 2 hot, 3 cold}; class 1 (dirty) comes only from write-back.
//!   The class sticks (hotness no longer changes it) until the object is rewritten; its blobs move
//!   to the class's scheme lazily (cleaner or re-encoder).
//! * `#QUERY# <pid> <oid> <R|W> <offset> <size>` — status: the sense code for that access.
//!
//! Fields are separated by ASCII whitespace; a message is at most 4 KiB. Anything malformed gets
//! sense −1 and a message saying what is wrong — never a panic.

use serde::Serialize;

use super::cache::Cache;
use super::health::{Access, ObjectStatus};
use super::sense::SenseCode;
use crate::object::Class;

/// Longest control message accepted.
pub const MAX_CONTROL_MESSAGE: usize = 4096;

/// The answer to a control message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ControlReply {
    /// Outcome of the message.
    pub sense: SenseCode,
    /// The numeric sense code (0, −1, 0x63…).
    pub code: i32,
    /// Human-readable detail (what was done, or why the message was refused).
    pub message: String,
    /// The object's status, for a query of a cached object.
    pub status: Option<ObjectStatus>,
}

impl ControlReply {
    fn new(sense: SenseCode, message: impl Into<String>, status: Option<ObjectStatus>) -> Self {
        ControlReply { sense, code: sense.code(), message: message.into(), status }
    }

    fn bad(message: impl Into<String>) -> Self {
        Self::new(SenseCode::Unsuccessful, message, None)
    }
}

impl Cache {
    /// Handles one control message (what a write to the reserved control object carries).
    pub fn control(&self, msg: &[u8]) -> ControlReply {
        if msg.len() > MAX_CONTROL_MESSAGE {
            return ControlReply::bad(format!("control message of {} bytes exceeds {MAX_CONTROL_MESSAGE}", msg.len()));
        }
        let Ok(text) = std::str::from_utf8(msg) else {
            return ControlReply::bad("control message is not UTF-8");
        };
        let fields: Vec<&str> = text.split_ascii_whitespace().collect();
        match fields.first().copied() {
            Some("#SETID#") => self.setid(&fields[1..]),
            Some("#QUERY#") => self.query_msg(&fields[1..]),
            Some(other) => ControlReply::bad(format!("unknown command {other:?} (expected #SETID# or #QUERY#)")),
            None => ControlReply::bad("empty control message"),
        }
    }

    fn setid(&self, f: &[&str]) -> ControlReply {
        let [pid, oid, cid] = f else {
            return ControlReply::bad(format!("#SETID# takes 3 fields (pid oid cid), got {}", f.len()));
        };
        let class = match *cid {
            "0" => Class::Metadata,
            "2" => Class::Hot,
            "3" => Class::Cold,
            "1" => return ControlReply::bad("class 1 (dirty) is set by write-back writes, not by command"),
            other => return ControlReply::bad(format!("class id {other:?} is not 0, 2 or 3")),
        };
        let key = format!("{pid}/{oid}");
        let mut s = self.lock();
        let Some(slot) = s.objects.find(key.as_bytes()) else {
            return ControlReply::bad(format!("object {key:?} is not cached"));
        };
        let e = s.objects.get_mut(slot).expect("found");
        e.set_explicit_class(true);
        if !e.dirty() {
            e.set_class(class);
            s.classes.wake_reencoder();
        }
        ControlReply::new(SenseCode::Success, format!("{key}: class {}", class as u8), None)
    }

    fn query_msg(&self, f: &[&str]) -> ControlReply {
        let [pid, oid, op, offset, size] = f else {
            return ControlReply::bad(format!("#QUERY# takes 5 fields (pid oid R|W offset size), got {}", f.len()));
        };
        let write = match *op {
            "R" | "r" => false,
            "W" | "w" => true,
            other => return ControlReply::bad(format!("operation {other:?} is not R or W")),
        };
        let (Ok(offset), Ok(size)) = (offset.parse::<u64>(), size.parse::<u64>()) else {
            return ControlReply::bad(format!("offset {offset:?} and size {size:?} must be unsigned integers"));
        };
        let key = format!("{pid}/{oid}");
        let status = self.status(key.as_bytes());
        if let Some(st) = &status {
            if st.access == Access::Corrupted {
                return ControlReply::new(SenseCode::Corrupted, format!("{key}: corrupted"), status);
            }
            if !write && offset.checked_add(size).is_none_or(|end| end > st.size) {
                return ControlReply::bad(format!("{key}: range {offset}+{size} is beyond its {} bytes", st.size));
            }
        } else if !write {
            return ControlReply::bad(format!("object {key:?} is not cached"));
        }
        let sense = self.engine_sense(write, size);
        ControlReply::new(sense, format!("{key}: sense {:#04x}", sense.code()), status)
    }
}
