#!/bin/sh
# doc/man/check.sh - every public call has a manual page, and squall(7)
# names every setting the group file parser knows.
#
#   check.sh SRCDIR
#
# A function (or lower-case function-like macro) declared in one of the
# installed API headers must appear in the NAME or SYNOPSIS section of some
# doc/man/*.md; every section.key of group/config.c's key table, "members"
# and every member field (as members[N].FIELD) must appear in squall.7.md.
# Each page's NAME lists exactly the names doc/man/meson.build installs for
# it (the page and its links). Needs only sh, awk, sed, grep and coreutils.
set -eu
src=${1:?usage: check.sh SRCDIR}
man=$src/doc/man
inc=$src/include/squall
fail=0

# Function names declared at file scope: comments, strings and preprocessor
# lines removed, bodies ({...}) skipped; in each statement outside
# typedefs, the first identifier followed by "(" outside parentheses.
functions() {
	awk '
	{ text = text $0 "\n" }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)  # comments
		n = split(text, lines, "\n"); text = ""
		for (i = 1; i <= n; i++) {
			l = lines[i]
			if (l ~ /^[ \t]*#[ \t]*define[ \t]+[a-z_][a-z0-9_]*\(/) {
				sub(/^[ \t]*#[ \t]*define[ \t]+/, "", l)
				sub(/\(.*/, "", l)
				print l
			}
			if (l ~ /^[ \t]*#/) {
				# a directive continued over several lines
				while (lines[i] ~ /\\$/ && i < n) i++
				continue
			}
			text = text l " "
		}
		gsub(/"([^"\\]|\\.)*"/, "\"\"", text)
		depth = 0; paren = 0; stmt = ""
		len = length(text)
		for (i = 1; i <= len; i++) {
			c = substr(text, i, 1)
			if (c == "{") { if (depth == 0) { flush(stmt); stmt = "" } depth++; continue }
			if (c == "}") { depth--; continue }
			if (depth > 0) continue
			if (c == ";") { flush(stmt); stmt = ""; continue }
			stmt = stmt c
		}
	}
	function flush(s,    m, name) {
		if (s ~ /^[ \t]*typedef[ \t]/) return
		# the first identifier directly before a "(" at paren depth 0
		while (match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			name = substr(s, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", name)
			if (name !~ /^__/) { print name; return }
			s = substr(s, RSTART + RLENGTH)
		}
	}' "$@"
}

# The NAME and SYNOPSIS sections of every page.
named() {
	awk '
	/^# / { keep = ($0 == "# NAME" || $0 == "# SYNOPSIS"); next }
	keep { print }' "$man"/*.md
}

names=$(named)
count=0
for f in $(functions "$inc/group.h" "$inc/alloc.h" "$inc/config.h" \
	"$inc/error.h" "$inc/version.h" "$inc/regcache.h" \
	"$inc/regcache_jemalloc.h" | sort -u); do
	count=$((count + 1))
	if ! printf '%s\n' "$names" | grep -qw -- "$f"; then
		echo "check.sh: $f (include/squall) is named in no doc/man page's NAME or SYNOPSIS" >&2
		fail=1
	fi
done
# Guard against a parser that finds nothing.
if [ "$count" -lt 60 ]; then
	echo "check.sh: found only $count public functions in include/squall: the header scan is broken" >&2
	fail=1
fi

# Each page's NAME lists the page's own name and the other names
# doc/man/meson.build installs as links to it, and no others: a name the
# page gives but no link installs is a manual "man NAME" cannot find.
# meson.build's entries: 'page.N': ['name', ...], over one or more lines.
links=$(awk -v q="'" '
	/^man_pages = \{/ { on = 1; next }
	on && /^\}/ { on = 0 }
	on { buf = buf $0 " " }
	END {
		n = split(buf, parts, "]")
		for (i = 1; i <= n; i++) {
			if (!match(parts[i], q "[^" q "]+[.][0-9]" q))
				continue
			out = substr(parts[i], RSTART + 1, RLENGTH - 2)
			rest = substr(parts[i], RSTART + RLENGTH)
			while (match(rest, q "[^" q "]+" q)) {
				out = out " " substr(rest, RSTART + 1, RLENGTH - 2)
				rest = substr(rest, RSTART + RLENGTH)
			}
			print out
		}
	}' "$man/meson.build")
npages=0
for f in "$man"/*.md; do
	page=$(basename "$f" .md)
	npages=$((npages + 1))
	given=$(awk '/^# NAME/ { on = 1; next } on && NF { print; exit }' "$f" |
		sed 's/ - .*//; s/, */\n/g' | sort | paste -sd ' ' -)
	listed=$(printf '%s\n' "$links" | awk -v p="$page" '$1 == p' |
		tr ' ' '\n' | sed '1s/[.][0-9]$//' | sort | paste -sd ' ' -)
	if [ -z "$listed" ]; then
		echo "check.sh: $page is not in doc/man/meson.build's man_pages" >&2
		fail=1
	elif [ "$given" != "$listed" ]; then
		echo "check.sh: $page NAME gives \"$given\", doc/man/meson.build installs \"$listed\"" >&2
		fail=1
	fi
done

# The settings: rows of the key table, e.g.
#   [K_REGION] = { "group", "region_size", KIND_SIZE, ...
cfg=$src/group/config.c
settings=$(sed -n 's/^[ \t]*\[K_[A-Z_]*\] = { "\([a-z_]*\)", "\([a-z_]*\)".*/\1.\2/p' "$cfg")
# Member fields: the names read_member() compares with.
fields=$(awk '/^static int read_member\(/, /^}/' "$cfg" |
	sed -n 's/.*strcmp(name, "\([a-z_]*\)").*/\1/p')
nset=0
for s in $settings; do
	nset=$((nset + 1))
	grep -qF "\`$s\`" "$man/squall.7.md" || {
		echo "check.sh: setting $s (group/config.c) is not in doc/man/squall.7.md" >&2
		fail=1
	}
done
nfield=0
for f in $fields; do
	nfield=$((nfield + 1))
	grep -qF "\`members[N].$f\`" "$man/squall.7.md" || {
		echo "check.sh: member setting members[N].$f (group/config.c) is not in doc/man/squall.7.md" >&2
		fail=1
	}
done
grep -qF '`members`' "$man/squall.7.md" || {
	echo "check.sh: members is not in doc/man/squall.7.md" >&2
	fail=1
}
if [ "$nset" -lt 10 ] || [ "$nfield" -lt 4 ]; then
	echo "check.sh: found only $nset settings and $nfield member fields in group/config.c: the scan is broken" >&2
	fail=1
fi

[ "$fail" -eq 0 ] && echo "check.sh: $count public functions, $nset settings and $nfield member fields documented, $npages pages' names installed"
exit "$fail"
