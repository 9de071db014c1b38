/*
 * version.h - library version and the wire protocol version.
 *
 * The wire version travels in the first message of every connection (rdma_cm
 * private data). Peers with a different major version refuse each other.
 */
#ifndef SQUALL_VERSION_H
#define SQUALL_VERSION_H

#define SQUALL_VERSION_STRING "0.1.0"

#define SQUALL_WIRE_MAJOR 1
#define SQUALL_WIRE_MINOR 2

/* libsquall's ABI: the library is built with hidden visibility, and the
 * calls declared below are what it exports (squall.map lists them). */
#pragma GCC visibility push(default)

/* The library's version string, "MAJOR.MINOR.PATCH". */
const char *squall_version(void);

#pragma GCC visibility pop

#endif /* SQUALL_VERSION_H */
