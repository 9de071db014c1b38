/*
 * config_scan.c - a lexical pass over a group file before libconfig parses it.
 *
 * libconfig 1.5 silently truncates integer literals beyond 32 bits that lack
 * an L suffix (5000000000 reads as 705032704) and follows @include. This pass
 * walks the raw text the way libconfig's lexer does (names, numbers, strings,
 * comments) and reports the first of each, with its line, so that the loader
 * can refuse them instead of loading a value the user did not write.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/config_parse.h"
/* A character of a libconfig name after its first: [-A-Za-z0-9_*]. */
static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '*';
}

/* The name before "= literal" or ": literal" ending at p, if there is one. */
static void name_before(const struct group_config_scan *sc, const char *p,
			char *dst, size_t size)
{
	const char *end;

	dst[0] = '\0';
	while (p > sc->begin && isspace((unsigned char)p[-1]))
		p--;
	if (p == sc->begin || (p[-1] != '=' && p[-1] != ':'))
		return;
	p--;
	while (p > sc->begin && isspace((unsigned char)p[-1]))
		p--;
	end = p;
	while (p > sc->begin && name_char(p[-1]))
		p--;
	if (end > p && (size_t)(end - p) < size) {
		memcpy(dst, p, (size_t)(end - p));
		dst[end - p] = '\0';
	}
}

/* One number token at p, sign included: records it when it is an integer
 * literal without L that libconfig would truncate (beyond 32 bits, or a
 * hex literal above 0x7fffffff). Returns the end of the token. */
static const char *scan_number(const char *p, const char *end, unsigned line,
			       struct group_config_scan *sc)
{
	const char *start = p, *digits;
	bool hex, is_float = false, neg = *p == '-';
	unsigned long long v;
	char buf[32];
	size_t n;

	if (*p == '-' || *p == '+')
		p++;
	digits = p;
	hex = end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
	for (; p < end; p++) {
		if (*p == '.' || (!hex && (*p == 'e' || *p == 'E'))) {
			is_float = true;
		} else if ((*p == '+' || *p == '-') && is_float &&
			   (p[-1] == 'e' || p[-1] == 'E')) {
			continue;
		} else if (!isalnum((unsigned char)*p)) {
			break;
		}
	}
	if (hex)
		digits += 2;
	while (digits + 1 < p && *digits == '0')
		digits++;
	n = (size_t)(p - digits);
	if (is_float || n == 0 || p[-1] == 'L' || p[-1] == 'l' || sc->big_line)
		return p;
	if (n >= sizeof(buf)) {
		v = ULLONG_MAX;
	} else {
		memcpy(buf, digits, n);
		buf[n] = '\0';
		errno = 0;
		v = strtoull(buf, NULL, hex ? 16 : 10);
		if (errno == ERANGE)
			v = ULLONG_MAX;
	}
	if (v > (neg && !hex ? 2147483648ULL : 2147483647ULL)) {
		size_t len = (size_t)(p - start);

		if (len >= sizeof(sc->big))
			snprintf(sc->big, sizeof(sc->big), "%.40s...", start);
		else
			snprintf(sc->big, sizeof(sc->big), "%.*s", (int)len, start);
		sc->big_line = line;
		name_before(sc, start, sc->big_name, sizeof(sc->big_name));
	}
	return p;
}

/* ---- structure: what libconfig reports as a bare "syntax error" -------- */

static bool in_list(const struct group_config_scan *sc)
{
	return sc->depth && sc->stack[sc->depth - 1].open != '{';
}

/* A list element begins at line: a ',' must have come since the last. */
static void elem_start(struct group_config_scan *sc, unsigned line)
{
	if (in_list(sc) && sc->stack[sc->depth - 1].after_elem &&
	    !sc->comma_line) {
		sc->comma_line = line;
		sc->comma_after = sc->stack[sc->depth - 1].elem_line;
	}
}

static void elem_end(struct group_config_scan *sc, unsigned line)
{
	if (in_list(sc)) {
		sc->stack[sc->depth - 1].after_elem = true;
		sc->stack[sc->depth - 1].elem_line = line;
	}
}

static void open_group(struct group_config_scan *sc, char c, unsigned line)
{
	elem_start(sc, line);
	if (sc->depth == sizeof(sc->stack) / sizeof(sc->stack[0]))
		return;
	sc->stack[sc->depth].open = c;
	sc->stack[sc->depth].line = line;
	sc->stack[sc->depth].after_elem = false;
	sc->stack[sc->depth].names_at = sc->nnames;
	sc->depth++;
}

static void close_group(struct group_config_scan *sc, unsigned line)
{
	if (!sc->depth)
		return;
	sc->depth--;
	sc->nnames = sc->stack[sc->depth].names_at;
	elem_end(sc, line);
}

/* A setting named in the innermost group: the second time is recorded. */
static void setting_name(struct group_config_scan *sc, const char *name,
			 size_t len, unsigned line)
{
	unsigned from = sc->depth ? sc->stack[sc->depth - 1].names_at : 0;

	if (len >= sizeof(sc->names[0]))
		return;
	for (unsigned i = from; i < sc->nnames; i++)
		if (strlen(sc->names[i]) == len && !memcmp(sc->names[i], name, len)) {
			if (!sc->dup_line) {
				sc->dup_line = line;
				sc->dup_first = sc->name_line[i];
				memcpy(sc->dup_name, name, len);
				sc->dup_name[len] = '\0';
			}
			return;
		}
	if (sc->nnames == sizeof(sc->names) / sizeof(sc->names[0]))
		return;
	memcpy(sc->names[sc->nnames], name, len);
	sc->names[sc->nnames][len] = '\0';
	sc->name_line[sc->nnames++] = line;
}

void group_config_scan(const char *p, const char *end,
		       struct group_config_scan *sc)
{
	unsigned line = 1;
	bool prev_string = false; /* "a" "b" is one string */

	while (p < end) {
		char c = *p;

		if (c == '\n') {
			line++;
			p++;
		} else if (c == '#' || (c == '/' && p + 1 < end && p[1] == '/')) {
			while (p < end && *p != '\n')
				p++;
		} else if (c == '/' && p + 1 < end && p[1] == '*') {
			for (p += 2; p < end && !(*p == '*' && p + 1 < end && p[1] == '/'); p++)
				line += *p == '\n';
			p = p < end ? p + 2 : end;
		} else if (c == '"') {
			unsigned start = line;

			if (!prev_string)
				elem_start(sc, line);
			for (p++; p < end && *p != '"'; p++) {
				if (*p == '\\' && p + 1 < end)
					p++;
				line += *p == '\n';
			}
			if (line != start && !sc->string_line)
				sc->string_line = start;
			p = p < end ? p + 1 : end;
			elem_end(sc, line);
			prev_string = true;
			continue;
		} else if (c == '@') {
			if (!sc->include_line && end - p >= 8 &&
			    memcmp(p, "@include", 8) == 0)
				sc->include_line = line;
			p++;
		} else if (isalpha((unsigned char)c) || c == '*') {
			const char *name = p, *q;

			while (p < end && name_char(*p))
				p++;
			for (q = p; q < end && (*q == ' ' || *q == '\t'); q++)
				;
			if (q < end && (*q == '=' || *q == ':')) {
				setting_name(sc, name, (size_t)(p - name), line);
			} else {
				/* a value: true, false */
				elem_start(sc, line);
				elem_end(sc, line);
			}
		} else if (isdigit((unsigned char)c) ||
			   ((c == '-' || c == '+' || c == '.') && p + 1 < end &&
			    isdigit((unsigned char)p[1]))) {
			elem_start(sc, line);
			p = scan_number(p, end, line, sc);
			elem_end(sc, line);
		} else {
			if (isspace((unsigned char)c)) {
				p++;
				continue;
			}
			if (c == '{' || c == '(' || c == '[')
				open_group(sc, c, line);
			else if (c == '}' || c == ')' || c == ']')
				close_group(sc, line);
			else if (c == ',' && in_list(sc))
				sc->stack[sc->depth - 1].after_elem = false;
			else if (c == ';' && in_list(sc) && !sc->semi_line) {
				sc->semi_line = line;
				sc->semi_list = sc->stack[sc->depth - 1].line;
			}
			p++;
		}
		prev_string = false;
	}
}

bool group_config_syntax_hint(const struct group_config_scan *sc,
			      unsigned line, const char *what, char *buf,
			      size_t size)
{
	/* The earliest finding at or before libconfig's line. */
	unsigned best = 0;
	int kind = -1;
	const unsigned at[4] = { sc->string_line, sc->comma_line,
				 sc->semi_line, sc->dup_line };

	for (int k = 0; k < 4; k++)
		if (at[k] && at[k] <= line && (!best || at[k] < best)) {
			best = at[k];
			kind = k;
		}
	switch (kind) {
	case 0:
		snprintf(buf, size, "%u: a string starts here and does not "
			 "end on this line: a closing '\"' is missing "
			 "(libconfig: %s at line %u)", best, what, line);
		return true;
	case 1:
		snprintf(buf, size, "%u: a ',' is missing between this element "
			 "of the list and the one before it (line %u) "
			 "(libconfig: %s at line %u)", best, sc->comma_after,
			 what, line);
		return true;
	case 2:
		snprintf(buf, size, "%u: ';' inside the list that starts at "
			 "line %u: separate a list's elements with ',' "
			 "(libconfig: %s at line %u)", best, sc->semi_list, what,
			 line);
		return true;
	case 3:
		snprintf(buf, size, "%u: %s: set twice in the same group "
			 "(first at line %u)", best, sc->dup_name, sc->dup_first);
		return true;
	default:
		return false;
	}
}
