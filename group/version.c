/*
 * version.c - the library's version and wire version, for tools and peers.
 */
#include <squall/version.h>

const char *squall_version(void)
{
	return SQUALL_VERSION_STRING;
}
