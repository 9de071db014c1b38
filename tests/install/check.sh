#!/usr/bin/env bash
# tests/install/check.sh BUILD SANITIZE: install the build into a scratch
# DESTDIR, then build an application outside the tree (tests/install/app.c)
# with nothing but what pkg-config says about the installed squall.pc, and
# run it against the installed libsquall. SANITIZE is the build's
# b_sanitize: an instrumented libsquall needs the application linked with
# the same sanitizers.
set -euo pipefail
build=$1
sanitize=${2:-none}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/squall-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "meson install failed"; }

pc=$(find "$root" -name squall.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || fail "no squall.pc installed under $root"
lib=$(find "$root" -name 'libsquall.so*' -type f | head -n1)
[ -n "$lib" ] || fail "no libsquall.so installed under $root"
# Which headers are installed (the API's, and no others): symbols.sh.
echo "installed: ${pc#$root}, ${lib#$root}, $(find "$root" -path '*/include/squall/*.h' | wc -l) headers"

# The key maker for group.key_file: installed, and its key private.
keygen=$(find "$root" -name squall-keygen -type f | head -n1)
[ -n "$keygen" ] || fail "squall-keygen is not installed"
LD_LIBRARY_PATH=$(dirname "$lib") "$keygen" "$tmp/group.key" >/dev/null ||
    fail "the installed squall-keygen failed"
[ "$(stat -c %a "$tmp/group.key")" = 600 ] && [ "$(wc -c <"$tmp/group.key")" = 65 ] ||
    fail "squall-keygen made $(stat -c '%a, %s bytes' "$tmp/group.key"), not a private 65-byte key"
echo "installed: ${keygen#$root}, which makes private keys"

# Paths in squall.pc name the real prefix; the sysroot puts them in DESTDIR.
export PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs squall) || fail "pkg-config cannot use $pc"
echo "pkg-config --cflags --libs squall: $flags"
case " $flags " in
*" -I$root/"*" -L$root/"*) ;;
*) fail "pkg-config flags do not point into the install: $flags" ;;
esac

san=()
[ "$sanitize" = none ] || san=("-fsanitize=$sanitize")
cc -std=gnu11 -Wall -Wextra -Werror "${san[@]}" "$here/app.c" -o "$tmp/app" $flags ||
    fail "the out-of-tree application does not build against the install"

export LD_LIBRARY_PATH=$(dirname "$lib")
deps=$(ldd "$tmp/app")
grep -q "libsquall\.so.* => $root/" <<<"$deps" ||
    fail "the application does not load the installed libsquall: $(grep squall <<<"$deps")"
out=$("$tmp/app") || fail "the application failed: $out"
echo "$out"
[[ "$out" == "squall "*" installed: allocator ok" ]] || fail "unexpected output: $out"
echo "PASS: installed squall builds, links and runs an out-of-tree application"
