//! What a get answers: the object's size, the token for a later fill, and the requested range as
//! fragment-aligned [`Piece`]s, each with its bytes (or their count) or marked missing. Shared by
//! the full get (`read.rs`) and the memory tier's (`memory_read.rs`).

/// One fragment-aligned part of a requested range. `T` is the bytes (`Vec<u8>`, from
/// [`crate::Cache::get`]) or their count (`u64`, from [`crate::Cache::get_sized`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece<T = Vec<u8>> {
    /// First byte of the part, an object offset.
    pub start: u64,
    /// End of the part (exclusive): the part is object bytes `[start, end)`.
    pub end: u64,
    /// The bytes from flash, or `None`: fetch this range from the backend.
    pub data: Option<T>,
}

/// The answer to a get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetResult<T = Vec<u8>> {
    /// The object's size if the cache knows the object.
    pub size: Option<u64>,
    /// Pass to [`crate::Cache::fill`] with the bytes fetched for the missing pieces.
    pub token: u64,
    /// The requested range (clamped to the size when known), in order. For an unknown object, one
    /// missing piece with the range as asked (`end` may be `u64::MAX`: to the end).
    pub pieces: Pieces<T>,
}

/// The pieces of a [`GetResult`]: one is kept inline (a get within one fragment allocates nothing).
pub type Pieces<T = Vec<u8>> = smallvec::SmallVec<[Piece<T>; 1]>;

impl<T> GetResult<T> {
    /// Every piece came from flash.
    pub fn is_hit(&self) -> bool {
        self.size.is_some() && self.pieces.iter().all(|p| p.data.is_some())
    }

    /// The ranges to fetch from the backend.
    pub fn missing(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.pieces.iter().filter(|p| p.data.is_none()).map(|p| (p.start, p.end))
    }
}
