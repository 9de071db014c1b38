# Killing one member (kill -9) makes its peers' operations fail with a
# clear error naming it, within seconds, not a hang.
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 3 7560)
for i in 1 2 3; do
    start "$i" $M --rounds 1000000 --no-perf --connect-timeout-ms 30000 --op-timeout-ms 60000
done
for t in $(seq 1 600); do
    n=$(cat "$OUT"/[123].out 2>/dev/null | grep -c "round 0 verified" || true)
    [ "$n" = 3 ] && break
    sleep 0.1
done
[ "$n" = 3 ] || fail "the members did not finish a round within 60 s"
kill -9 "${PID[3]}"
t0=$(date +%s)
finish 1 45; rc1=$RC
finish 2 45; rc2=$RC
t1=$(date +%s)
[ "$rc1" = 1 ] || fail "member 1: status $rc1 after member 3 was killed, want 1"
[ "$rc2" = 1 ] || fail "member 2: status $rc2 after member 3 was killed, want 1"
for i in 1 2; do
    expect "$OUT/$i.err" "member $i: .*member 3 \(10\.77\.0\.3:7563\)" "member $i names the dead peer"
done
cat "$OUT/1.err" "$OUT/2.err"
echo "PASS: both survivors reported member 3's death within $((t1 - t0)) s"
