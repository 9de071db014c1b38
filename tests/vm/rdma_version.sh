# A peer that speaks another wire major version is refused, and both sides
# say so naming both versions.
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 2 7540)
# This build's wire minor, which both members speak.
MINOR=$(sed -n 's/^#define SQUALL_WIRE_MINOR \([0-9]*\).*/\1/p' "$SRC/include/squall/version.h")
[ -n "$MINOR" ] || fail "no SQUALL_WIRE_MINOR in include/squall/version.h"
SQUALL_TEST_WIRE_MAJOR=2 start 2 $M --connect-timeout-ms 15000
sleep 1
start 1 $M --connect-timeout-ms 15000
finish 1 30; rc1=$RC
finish 2 30; rc2=$RC
[ "$rc1" = 1 ] || fail "member 1: status $rc1, want 1"
[ "$rc2" = 1 ] || fail "member 2: status $rc2, want 1"
expect "$OUT/1.err" "member 2 \(10\.77\.0\.2:7542\) speaks wire version 2\.$MINOR, this member speaks 1\.$MINOR" "connecting side"
expect "$OUT/2.err" "member 1 \(10\.77\.0\.1:7541\) speaks wire version 1\.$MINOR, this member speaks 2\.$MINOR" "accepting side"
grep -q "connected to" "$OUT/1.out" "$OUT/2.out" && fail "a member claims to be connected"
cat "$OUT/1.err" "$OUT/2.err"
echo "PASS: wire major 1 and 2 refuse each other, naming both versions"
