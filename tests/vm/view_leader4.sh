# View change after kill -9 of the leader (member 0, the lowest-ranked),
# 4 members: the survivors 1, 2 and 3 install epoch 1 with members 1,2,3
# within BOUND_MS of the kill (the figure is printed), stream 3 s more and
# close; per epoch the same deliveries in one order on every survivor,
# every message of a live sender delivered exactly once, the same number
# of member 0's messages everywhere (see view_common.sh).
N=4
# Suspicion at 4 s: the members share the VM's two emulated CPUs with
# each other and the host's load, and a heartbeat late by 1-2 s there
# is not a failure.
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
BOUND_MS=${BOUND_MS:-30000}
. "$SRC/tests/vm/view_common.sh"

start_members leader
sleep 3
kill_member 0
wait_views leader "1 2 3" 1 120
sleep 3
stop_streaming leader
finish_members leader "1 2 3" 300 0
check_survivors leader "1 2 3" 0 1,2,3 "${KILL_MS[0]}" "$BOUND_MS"
echo "PASS"
