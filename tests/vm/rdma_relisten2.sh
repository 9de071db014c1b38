# A member keeps its listener from one node to the next (as a survivor
# does from view to view) and a peer that asks meanwhile finds it alive.
# Member 1 holds its first node 1.5 s without reading its connection
# events, then keeps the listener and waits 1.5 s more before its next
# node listens on it; member 2 goes to its next node at once and, as the
# higher member, asks member 1 whether it still listens (a probe) from
# the start. Its probes wait in member 1's listener: neither keeping it
# nor taking it over may refuse them as "nothing listens here", which
# would make member 2 drop a live member as gone. Both then connect and
# run a round of verified traffic over the new connections, and each
# finds the other's region key unchanged: a next node takes over its
# region's registration instead of registering the region again.
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 2 7590)
ARGS="$M --rounds 1 --no-perf --connect-timeout-ms 60000"
start 1 $ARGS --relisten 1500,1500
start 2 $ARGS --relisten 0,0
finish_ok 1 120
finish_ok 2 120
for i in 1 2; do
    expect "$OUT/$i.out" "member $i reconnected to 1 peers on its kept listener" "member $i's next node"
    expect "$OUT/$i.out" "member $i round 0 verified" "member $i's round on the next node"
    expect "$OUT/$i.out" "member $i OK" "member $i's end"
done
# Each next node took its region's registration over from the last one.
expect "$OUT/1.out" "member 1: member 2's region key kept" "member 2's kept registration"
expect "$OUT/2.out" "member 2: member 1's region key kept" "member 1's kept registration"
grep -q "is gone" "$OUT/1.err" "$OUT/2.err" && fail "a live member was found gone"
for i in 1 2; do show "$i"; done
echo "PASS: member 1's kept listener answered member 2's probes after $(grep -ho 'held [0-9]* ms, parked [0-9]* ms' "$OUT/1.out")"
