#ifndef HERALD_CMICROHTTPD_SHIM_H
#define HERALD_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// Enum values whose names libmicrohttpd redefines as macros, which Swift cannot import.
static const enum MHD_Result HERALD_MHD_YES = MHD_YES;
static const enum MHD_Result HERALD_MHD_NO = MHD_NO;
static const enum MHD_ValueKind HERALD_MHD_HEADER_KIND = MHD_HEADER_KIND;
static const enum MHD_ValueKind HERALD_MHD_GET_ARGUMENT_KIND = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode HERALD_MHD_RESPMEM_MUST_COPY = MHD_RESPMEM_MUST_COPY;
static const enum MHD_ConnectionNotificationCode HERALD_MHD_CONNECTION_STARTED = MHD_CONNECTION_NOTIFY_STARTED;

/// The socket of a connection (-1 when unknown). libmicrohttpd owns it: shut it down, never close it.
static inline int herald_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// What the connection-notify callback stored for this connection when it started.
static inline void *herald_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// The size of the request head libmicrohttpd parsed in place, from the method's first byte through
/// the blank line (0 when unknown).
static inline size_t herald_mhd_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

/// Called with each request's target as received (before it is decoded, up to a NUL), before the
/// headers are parsed; what it returns is the request's state in the access handler's first call.
typedef void *(*herald_mhd_target_callback)(void *cls, const char *target, struct MHD_Connection *connection);

/// Writes the client's IP address as text into `buffer` (empty when unknown).
static inline void herald_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    buffer[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET && size >= INET_ADDRSTRLEN) {
        // Written digit by digit: glibc's inet_ntop formats IPv4 through sprintf, a cost on every request.
        const uint8_t *octets = (const uint8_t *)&((const struct sockaddr_in *)address)->sin_addr;
        char *out = buffer;
        for (int i = 0; i < 4; i++) {
            uint8_t octet = octets[i];
            if (octet >= 100) *out++ = (char)('0' + octet / 100);
            if (octet >= 10) *out++ = (char)('0' + octet / 10 % 10);
            *out++ = (char)('0' + octet % 10);
            *out++ = i < 3 ? '.' : 0;
        }
    } else if (address->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, size);
    }
}

/// Starts a daemon listening on `host:port` (IPv4 or IPv6 literal) with an internal epoll
/// thread pool and suspend/resume enabled. `MHD_start_daemon` is variadic, so Swift calls this fixed-shape wrapper instead.
/// `target` sees each request's target first (`herald_mhd_target_callback`).
/// `notify` hears of every connection that starts and closes (on the I/O thread that owns it, before its
/// socket is closed). Returns NULL when the address does not parse or the daemon cannot start (errno tells why).
static inline struct MHD_Daemon *herald_mhd_start(const char *host, uint16_t port, unsigned int threads,
                                                  unsigned int connection_limit, unsigned int timeout_seconds,
                                                  MHD_AccessHandlerCallback handler, void *handler_cls,
                                                  MHD_RequestCompletedCallback completed, void *completed_cls,
                                                  MHD_NotifyConnectionCallback notify, void *notify_cls,
                                                  herald_mhd_target_callback target, void *target_cls) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    const struct sockaddr *address;
    memset(&v4, 0, sizeof v4);
    memset(&v6, 0, sizeof v6);
    if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        v4.sin_port = htons(port);
        address = (const struct sockaddr *)&v4;
    } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        v6.sin6_port = htons(port);
        address = (const struct sockaddr *)&v6;
        flags |= MHD_USE_IPv6;
    } else {
        return NULL;
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
                            MHD_OPTION_URI_LOG_CALLBACK, target, target_cls,
                            MHD_OPTION_END);
}

/// The port the daemon actually listens on (useful when started on port 0).
static inline uint16_t herald_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
#endif
