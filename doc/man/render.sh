#!/bin/sh
# doc/man/render.sh - every built manual page renders without a warning.
#
#   render.sh PAGE...
#
# Run by the unit suite when pandoc built the pages and man(1) is there.
set -eu
fail=0
for p in "$@"; do
	out=$(MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null) || {
		echo "render.sh: man -l $p failed: $out" >&2
		fail=1
		continue
	}
	if [ -n "$out" ]; then
		echo "render.sh: $p: $out" >&2
		fail=1
	fi
done
[ "$fail" -eq 0 ] && echo "render.sh: $# pages render without warnings"
exit "$fail"
