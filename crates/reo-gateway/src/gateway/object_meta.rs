//! The cache's metadata of a backend object.

use reo_cache::ObjectMeta;

use crate::backend::ObjectInfo;

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
