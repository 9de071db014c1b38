# One member's link cut for good while all stream, 4 members in 4 VMs:
# member 2's tap leaves the bridge 3 s into the stream (its VM, kernel and
# process go on, cut off). The survivors 0, 1 and 3 install epoch 1 with
# members 0,1,3 within BOUND_MS of the cut (the figure is printed), stream
# 3 s more and close: per epoch the same deliveries in one order on every
# survivor, every message of a live sender delivered exactly once, the same
# prefix of member 2's everywhere (vs_check). Member 2, alone, stops for
# want of a majority (status 3) and installs no view.
N=4
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
BOUND_MS=${BOUND_MS:-30000}
. "$SRC/tests/cluster/lib.sh"

view_args
start_cluster 900 cut -- "${VIEW_ARGS[@]}"
go cut
ready cut 180
sleep 3
fault cut 2
wait_views cut "0 1 3" 1 120
sleep 3
stop_streaming cut
exited cut "0 1 3" 300 0
exited cut 2 300 3
grep -q "^STOPPED member=2 .*majority" "$OUT/cut.2.out" ||
    fail "cut: member 2 did not stop for want of a majority"
grep -E "^VIEW member=2 epoch=[1-9]" "$OUT/cut.2.out" && fail "cut: member 2 installed a view alone"
echo "ok: cut: member 2, cut off: $(grep "^STOPPED" "$OUT/cut.2.out")"
check_survivors cut "0 1 3" 2 0,1,3 "$FAULT_MS" "$BOUND_MS"
end_cluster 120
echo "PASS"
