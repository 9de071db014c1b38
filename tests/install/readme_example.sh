#!/usr/bin/env bash
# tests/install/readme_example.sh README EXAMPLE: the C block of README.md
# between <!-- readme-example:begin --> and <!-- readme-example:end --> must
# be byte for byte examples/readme_example.c, which the build compiles: so
# the example a reader copies from the README always builds.
set -euo pipefail
readme=$1
example=$2
tmp=$(mktemp /tmp/squall-readme.XXXXXX)
trap 'rm -f "$tmp"' EXIT

n=$(grep -c '^<!-- readme-example:begin -->$' "$readme" || true)
[ "$n" = 1 ] || { echo "FAIL: $readme has $n readme-example:begin markers, want 1"; exit 1; }
awk '
    /^<!-- readme-example:begin -->$/ { state = 1; next }
    state == 1 && /^```c$/            { state = 2; next }
    state == 2 && /^```$/             { state = 3; next }
    state == 2                        { print }
    /^<!-- readme-example:end -->$/   { if (state != 3) exit 1; state = 4 }
    END                               { if (state != 4) exit 1 }
' "$readme" >"$tmp" || { echo "FAIL: no \`\`\`c block closed between the markers in $readme"; exit 1; }
if ! cmp -s "$tmp" "$example"; then
    echo "FAIL: the README example differs from $example:"
    diff -u "$example" "$tmp" || true
    exit 1
fi
echo "PASS: the README example is $example ($(wc -l <"$example") lines)"
