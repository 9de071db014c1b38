# A connection request whose sender died before it was read is not a
# reason for the reader to fail. Member 2 holds its first node 3 s
# without reading its connection events, then goes to its next node on
# its kept listener; member 1 goes to its next node at once and asks
# member 2 for a connection, which waits unread in member 2's listener,
# and is killed 1.5 s later. When member 2 reads the request its sender
# is gone and the accept cannot complete: member 2 must drop that
# attempt, find member 1 gone (nothing listens at its address) and say
# so, not fail on the accept.
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 2 7595)
ARGS="$M --rounds 1 --no-perf --connect-timeout-ms 30000"
start 2 $ARGS --relisten 3000,0
start 1 $ARGS --relisten 0,0
wait_line "$OUT/1.out" "member 1 connected to 1 peers" 30 "${PID[1]}" ||
    fail "member 1 did not connect within 30 s"
sleep 1.5
kill -9 "${PID[1]}"
finish 1 30
finish 2 60; rc2=$RC
[ "$rc2" = 1 ] || fail "member 2: status $rc2, want 1 (member 1 gone)"
grep -q "rdma_accept" "$OUT/2.err" && fail "member 2 failed on accepting a dead member's request"
expect "$OUT/2.err" "member 2: connecting the next node: member 1 \(10\.77\.0\.1:7596\) is gone" "member 2's verdict"
show 2
echo "PASS: a dead member's unread request did not fail the reader, which found it gone"
