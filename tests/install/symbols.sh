#!/usr/bin/env bash
# tests/install/symbols.sh BUILD SRC: what squall installs is its API and
# no more. Install the build into a scratch DESTDIR, then check:
#  - include/squall holds exactly the API headers (alloc, config, error,
#    group, regcache, regcache_jemalloc, version), and no internal header
#    (sst.h, smc.h, rdmc.h, rdma.h, wire.h) is installed anywhere;
#  - the installed libsquall.so exports exactly the calls SRC/squall.map
#    lists, each in the map's version node (nm -D --defined-only: nothing
#    missing, nothing extra, no data), and libsquall_jemalloc.so exactly
#    those of SRC/squall_jemalloc.map;
#  - every function the installed headers declare (not static inline) is
#    in its library's map, and the map lists nothing they do not declare
#    (gcc -aux-info on each installed header alone, which also shows that
#    each compiles on its own).
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d /tmp/squall-symbols.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
api_headers="alloc.h config.h error.h group.h regcache.h regcache_jemalloc.h version.h"
internal_headers="rdma.h rdmc.h smc.h sst.h wire.h"
bad=0

fail() { echo "FAIL: $*"; exit 1; }
wrong() { echo "WRONG: $*"; bad=1; }
# Lines of file $2 not in file $1 (both sorted), as one line.
missing_from() { comm -13 "$1" "$2" | paste -sd ' ' -; }
# same_lines A B OK WHAT ONLY_A ONLY_B: the sorted files A and B hold the
# same lines (echo OK), or WRONG names what each holds that the other does
# not ("WHAT: ONLY_A: ...; ONLY_B: ...").
same_lines() {
    local a b
    if cmp -s "$1" "$2"; then
        echo "$3"
        return
    fi
    a=$(missing_from "$2" "$1")
    b=$(missing_from "$1" "$2")
    wrong "$4: $5: ${a:-none}; $6: ${b:-none}"
}

meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "meson install failed"; }

# The headers.
incdir=$(find "$root" -type d -path '*/include/squall' | head -n1)
[ -n "$incdir" ] || fail "no include/squall installed under $root"
(cd "$incdir" && find . -mindepth 1 -printf '%P\n' | sort) >"$tmp/headers.installed"
tr ' ' '\n' <<<"$api_headers" | sort >"$tmp/headers.api"
same_lines "$tmp/headers.api" "$tmp/headers.installed" \
    "headers: ${incdir#$root} holds the API's: $(paste -sd ' ' - <"$tmp/headers.installed")" \
    "${incdir#$root}" "API headers not installed" "installed but not API"
for h in $internal_headers; do
    f=$(find "$root" -name "$h" | head -n1)
    [ -z "$f" ] || wrong "internal header $h is installed as ${f#$root}"
done

# The names a map lists (between global: and local:) and its node.
map_names() {
    awk 'BEGIN { RS = "\0" } {
        gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "")
        n = split($0, w, /[ \t\n;{}]+/)
        for (i = 1; i <= n; i++) {
            if (w[i] == "global:") { on = 1; continue }
            if (w[i] == "local:") on = 0
            if (on && w[i] != "") print w[i]
        }
    }' "$1" | sort
}
map_node() {
    awk 'BEGIN { RS = "\0" } {
        gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "")
        if (match($0, /[A-Za-z_][A-Za-z0-9_.]*[ \t\n]*\{/)) {
            s = substr($0, RSTART, RLENGTH); sub(/[ \t\n]*\{$/, "", s); print s
        }
    }' "$1"
}

# check_lib NAME MAP HEADERS...: the installed library NAME against MAP,
# and MAP against the functions HEADERS declare.
check_lib() {
    local name=$1 map=$2 lib node h f
    shift 2
    lib=$(find "$root" -name "$name.so.*" -type f | head -n1)
    [ -n "$lib" ] || fail "no $name.so installed under $root"
    node=$(map_node "$map")
    [ -n "$node" ] || fail "$map has no version node"
    map_names "$map" >"$tmp/$name.map"
    [ -s "$tmp/$name.map" ] || fail "$map lists no call"
    [ -z "$(uniq -d "$tmp/$name.map")" ] || wrong "$map lists twice: $(uniq -d "$tmp/$name.map" | tr '\n' ' ')"

    # Exported: every defined dynamic symbol. The version node itself is
    # an absolute symbol; every other one must be a function in that node.
    nm -D --defined-only "$lib" >"$tmp/$name.nm" || fail "nm -D $lib failed"
    awk -v node="$node" -v lib="$name" '
        $2 == "A" && $3 == node { next }
        $2 != "T" { print "WRONG: " lib " exports " $3 " (type " $2 ", not a call)" > "/dev/stderr"; bad = 1; next }
        { s = $3; v = s; sub(/@.*/, "", s); sub(/^[^@]*@@?/, "", v)
          if (v != node) { print "WRONG: " lib " exports " $3 ", not in " node > "/dev/stderr"; bad = 1 }
          print s }
        END { exit bad }' "$tmp/$name.nm" 2>"$tmp/$name.odd" | sort >"$tmp/$name.exported" || {
        cat "$tmp/$name.odd"; bad=1; }
    same_lines "$tmp/$name.map" "$tmp/$name.exported" \
        "$name: ${lib#$root} exports $(wc -l <"$tmp/$name.exported") calls in $node, as $(basename "$map") lists" \
        "${lib#$root} against $(basename "$map")" \
        "listed but not exported" "exported but not listed"

    # Declared: what gcc sees in each installed header on its own, that
    # header's own lines, less static (inline) functions.
    : >"$tmp/$name.declared"
    for h in "$@"; do
        f=$incdir/$h
        [ -f "$f" ] || { wrong "$h is not installed"; continue; }
        printf '#include <squall/%s>\n' "$h" >"$tmp/tu.c"
        rm -f "$tmp/tu.aux"
        gcc -std=gnu11 -Wall -Wextra -Werror -I"${incdir%/squall}" -fsyntax-only \
            -aux-info "$tmp/tu.aux" "$tmp/tu.c" >"$tmp/tu.log" 2>&1 ||
            { cat "$tmp/tu.log"; wrong "installed squall/$h does not compile on its own"; continue; }
        # A line: /* FILE:LINE:NC */ extern TYPE NAME (PARAMS);
        awk -v f="$f" 'index($0, "/* " f ":") == 1 {
            sub(/^\/\* [^ ]* \*\/ /, "")
            if ($1 == "static") next
            sub(/ \(.*/, ""); sub(/.*[ *]/, ""); print
        }' "$tmp/tu.aux" >>"$tmp/$name.declared"
    done
    sort -u -o "$tmp/$name.declared" "$tmp/$name.declared"
    [ -s "$tmp/$name.declared" ] || wrong "found no function declared in $*"
    same_lines "$tmp/$name.declared" "$tmp/$name.map" \
        "$name: the installed headers ($*) declare $(wc -l <"$tmp/$name.declared") calls, as $(basename "$map") lists" \
        "$(basename "$map") against the installed headers ($*)" \
        "declared but not listed" "listed but not declared"
}

command -v gcc >/dev/null || fail "gcc is needed (its -aux-info lists the headers' declarations)"
check_lib libsquall "$src/squall.map" alloc.h config.h error.h group.h regcache.h version.h
check_lib libsquall_jemalloc "$src/squall_jemalloc.map" regcache_jemalloc.h

[ "$bad" = 0 ] || fail "what squall installs is not exactly its API"
echo "PASS: squall installs the API headers only, and its libraries export exactly the calls they declare"
