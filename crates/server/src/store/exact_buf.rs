//! Exact-size byte buffers that start with a header: what the packed collections
//! ([`super::tagged_entries`], [`super::sorted_ints`]) are, so that each is one
//! allocation with no spare room, as Redis's listpacks and intsets are.

/// Runs `change` on `buf` as a vector, then keeps it at its exact size again. An empty
/// buffer (no allocation yet) is given `header` first, so `change` always finds one.
///
/// `change` should reserve exactly what it adds: the vector then becomes a box again
/// without a second reallocation.
pub fn edit<R>(buf: &mut Box<[u8]>, header: &[u8], change: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut vec = std::mem::take(buf).into_vec();
    if vec.len() < header.len() {
        vec.clear();
        vec.extend_from_slice(header);
    }
    let out = change(&mut vec);
    *buf = vec.into_boxed_slice();
    out
}

/// The header of `buf`, given `empty` first when it has none yet (no allocation), so an
/// owner's count can be recorded before anything else is stored.
pub fn header_mut<'b>(buf: &'b mut Box<[u8]>, empty: &[u8]) -> &'b mut [u8] {
    if buf.len() < empty.len() {
        edit(buf, empty, |_| ());
    }
    let len = empty.len().min(buf.len());
    &mut buf[..len]
}
