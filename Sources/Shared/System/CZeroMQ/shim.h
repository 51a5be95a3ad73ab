#ifndef HERALD_CZEROMQ_SHIM_H
#define HERALD_CZEROMQ_SHIM_H
#include <zmq.h>
#endif
