#ifndef HERALD_CZLIB_SHIM_H
#define HERALD_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 is a macro that Swift cannot import. Negative window bits: a raw deflate stream,
/// as zip entries hold it (no zlib header or checksum).
static inline int herald_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -MAX_WBITS);
}
#endif
