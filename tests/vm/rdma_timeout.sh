# A member whose peer never starts gives up after the connect timeout with
# an error naming the peer and its address: both as the connecting side
# (member 1 -> 2) and as the accepting side (member 2 waits for 1).
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 2 7520)
t0=$(date +%s)
start 1 $M --connect-timeout-ms 2000
finish 1 30; rc=$RC
t1=$(date +%s)
[ "$rc" = 1 ] || fail "member 1 alone: status $rc, want 1"
expect "$OUT/1.err" "connect \(gave up after [23][0-9]{3} ms\): member 1 could not connect to member 2 \(10\.77\.0\.2:7522\) within 2000 ms" "active timeout"
# The process as a whole (start-up included, slow under TCG) must not hang.
[ $((t1 - t0)) -le 30 ] || fail "member 1 took $((t1 - t0)) s to give up (timeout 2 s)"
mv "$OUT/1.err" "$OUT/1.active.err"; mv "$OUT/1.out" "$OUT/1.active.out"

start 2 $M --connect-timeout-ms 2000
finish 2 30; rc=$RC
[ "$rc" = 1 ] || fail "member 2 alone: status $rc, want 1"
expect "$OUT/2.err" "connect \(gave up after [23][0-9]{3} ms\): member 2: member 1 \(10\.77\.0\.1:7521\) did not connect within 2000 ms" "passive timeout"
cat "$OUT/1.active.err" "$OUT/2.err"
echo "PASS: a member whose peers never start fails with the timeout error (connect gave up after 2-4 s)"
