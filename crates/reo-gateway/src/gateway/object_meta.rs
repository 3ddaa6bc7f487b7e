//! The cache's metadata of a backend object, and the object's info from it.

use reo_cache::ObjectMeta;

use crate::backend::ObjectInfo;

/// The info of a cached object of `size` bytes from its metadata (its blob header).
pub(crate) fn info_of(size: u64, m: ObjectMeta) -> ObjectInfo {
    ObjectInfo {
        size,
        etag: m.etag,
        content_type: m.content_type,
        user_meta: m.user.into_iter().collect(),
        mtime_ns: m.mtime_ns,
        system: m.system.into_iter().collect(),
    }
}

/// The cache's metadata of an object.
pub(crate) fn meta_of(info: &ObjectInfo) -> ObjectMeta {
    ObjectMeta {
        etag: info.etag.clone(),
        content_type: info.content_type.clone(),
        mtime_ns: info.mtime_ns,
        user: info.user_meta.clone().into_iter().collect(),
        system: info.system.clone().into_iter().collect(),
    }
}
