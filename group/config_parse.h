/*
 * config_parse.h - the group-file loader on text in memory (internal).
 *
 * group_config_load reads a file and hands its bytes here; the fuzz target
 * and tests call it directly. Not part of the public API.
 */
#ifndef SQUALL_GROUP_CONFIG_PARSE_H
#define SQUALL_GROUP_CONFIG_PARSE_H

#include <stddef.h>

#include <squall/config.h>

/* Parse and validate `len` bytes of group-file text (need not be
 * NUL-terminated; a NUL inside is an error), naming it `name` in errors as
 * a file would be. No node file, no --set. Same results as
 * group_config_load; out->path is set to name (truncated to fit). */
int group_config_parse_text(const char *name, const char *text, size_t len,
			    struct group_config *out, struct squall_error *err);

#endif /* SQUALL_GROUP_CONFIG_PARSE_H */
