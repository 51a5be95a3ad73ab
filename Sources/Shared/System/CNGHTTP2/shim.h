#ifndef HERALD_CNGHTTP2_SHIM_H
#define HERALD_CNGHTTP2_SHIM_H
/// libnghttp2 (Debian's libnghttp2-dev): the HTTP/2 framing of the edge's server side. Only the
/// HTTP2Server target imports it.
#include <nghttp2/nghttp2.h>
#endif
