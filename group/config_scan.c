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

void group_config_scan(const char *p, const char *end,
		       struct group_config_scan *sc)
{
	unsigned line = 1;

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
			for (p++; p < end && *p != '"'; p++) {
				if (*p == '\\' && p + 1 < end)
					p++;
				line += *p == '\n';
			}
			p = p < end ? p + 1 : end;
		} else if (c == '@') {
			if (!sc->include_line && end - p >= 8 &&
			    memcmp(p, "@include", 8) == 0)
				sc->include_line = line;
			p++;
		} else if (isalpha((unsigned char)c) || c == '*') {
			while (p < end && name_char(*p))
				p++;
		} else if (isdigit((unsigned char)c) ||
			   ((c == '-' || c == '+' || c == '.') && p + 1 < end &&
			    isdigit((unsigned char)p[1]))) {
			p = scan_number(p, end, line, sc);
		} else {
			p++;
		}
	}
}

