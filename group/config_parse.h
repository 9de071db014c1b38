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

/* What a pass over the raw text found before libconfig parses it, for
 * what libconfig 1.5 lets through: @include (a group file must be
 * self-contained, and its fingerprint must cover everything) and integer
 * literals beyond 32 bits without an L suffix, which libconfig truncates
 * without a word (5000000000 reads as 705032704). */
struct group_config_scan {
	const char *begin;      /* set by the caller: start of the text */
	unsigned include_line;  /* first @include, 0 if none */
	unsigned big_line;      /* first too-big integer literal, 0 if none */
	char big[64];           /* that literal as written (cut at 40 chars) */
	char big_name[64];      /* the name in "name = literal", "" if none */
};

/* Scan [p, end) (strings and comments skipped) into sc, which the caller
 * zeroes and whose begin it sets to p. */
void group_config_scan(const char *p, const char *end,
		       struct group_config_scan *sc);

#endif /* SQUALL_GROUP_CONFIG_PARSE_H */
