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
	/* What libconfig reports as a bare "syntax error", often lines
	 * later: each the first of its kind (line 0: none), for
	 * group_config_syntax_hint. */
	unsigned string_line;   /* a string that runs past its line */
	unsigned comma_line;    /* a list element with no ',' before it */
	unsigned comma_after;   /* the line of the element before it */
	unsigned semi_line;     /* a ';' directly inside a list */
	unsigned semi_list;     /* the line that list starts on */
	unsigned dup_line;      /* a setting named twice in one group */
	unsigned dup_first;     /* where it was first named */
	char dup_name[64];
	/* the scan's own state */
	unsigned depth;
	struct { char open; unsigned line; bool after_elem; unsigned elem_line;
		 unsigned nnames; unsigned names_at; } stack[32];
	char names[64][64];     /* setting names of the open groups */
	unsigned name_line[64];
	unsigned nnames;
};

/* Scan [p, end) (strings and comments skipped) into sc, which the caller
 * zeroes and whose begin it sets to p. */
void group_config_scan(const char *p, const char *end,
		       struct group_config_scan *sc);

/* After libconfig failed with `what` at line `line`: a message that says
 * what is wrong and where, from what the scan found at or before that
 * line, into buf; false when the scan found nothing to say. */
bool group_config_syntax_hint(const struct group_config_scan *sc,
			      unsigned line, const char *what, char *buf,
			      size_t size);

#endif /* SQUALL_GROUP_CONFIG_PARSE_H */
