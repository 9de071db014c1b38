# View change after a kill -9, 4 members (see view_common.sh and
# view_member.c):
#  - no failure: every member streams for 3 s and closes; all stay in
#    epoch 0, deliver the same messages in one order, lose nothing;
#  - every member streams, member 2 is killed with kill -9 after 3 s (its
#    rdma_cm descriptor checked to be above its verbs device's first): the
#    survivors 0, 1 and 3 install epoch 1 with members 0,1,3 (within
#    BOUND_MS of the kill; the figure is printed), stream 3 s more in it
#    and close: per epoch the same deliveries in one order on every
#    survivor, every message of a live sender delivered exactly once, the
#    same number of member 2's messages everywhere.
N=4
# Suspicion at 4 s: the members share the VM's two emulated CPUs with
# each other and the host's load, and a heartbeat late by 1-2 s there
# is not a failure.
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
BOUND_MS=${BOUND_MS:-30000}
. "$SRC/tests/vm/view_common.sh"

start_members calm
sleep 3
stop_streaming calm
finish_members calm "0 1 2 3" 300 0
check_survivors calm "0 1 2 3" "" 0,1,2,3 0
grep -Eq "^VIEW .* epoch=[1-9]" "$OUT"/calm.*.out && fail "calm: a view change without a failure"
echo "ok: calm: no view change without a failure"

start_members kill
# A process's files are released from the highest descriptor down when it
# dies: member 2's rdma_cm channel must sit above its verbs device, so that
# its connections close (the survivors are told) before its queue pairs
# and registered memory are torn down (rdma/device.c).
fds=$(ls -l "/proc/${PID[2]}/fd")
cm_fd=$(awk '$NF == "/dev/infiniband/rdma_cm" && (m == "" || $(NF-2) < m) { m = $(NF-2) }
    END { print m }' <<<"$fds")
verbs_fd=$(awk '$NF ~ /^\/dev\/infiniband\/uverbs/ && $(NF-2) > m + 0 { m = $(NF-2) }
    END { print m }' <<<"$fds")
[ -n "$cm_fd" ] && [ -n "$verbs_fd" ] ||
    fail "kill: member 2 has no rdma_cm or no uverbs descriptor: $fds"
[ "$cm_fd" -gt "$verbs_fd" ] ||
    fail "kill: member 2's rdma_cm descriptor $cm_fd is below its verbs device's $verbs_fd"
echo "ok: kill: member 2's rdma_cm descriptor $cm_fd is above its verbs device's $verbs_fd"
sleep 3
kill_member 2
wait_views kill "0 1 3" 1 120
sleep 3
stop_streaming kill
finish_members kill "0 1 3" 300 0
check_survivors kill "0 1 3" 2 0,1,3 "${KILL_MS[2]}" "$BOUND_MS"
echo "PASS"
