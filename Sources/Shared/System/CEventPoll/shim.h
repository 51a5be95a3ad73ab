#ifndef HERALD_CEVENTPOLL_SHIM_H
#define HERALD_CEVENTPOLL_SHIM_H
/// Linux readiness notification (epoll, with epoll_pwait2's nanosecond timeout) and the eventfd that
/// wakes a waiting loop. Glibc's Swift module map does not include these headers, so the SDK
/// client's event loop (`EventPoll`) and Core's `Wakeup` import them from here.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
