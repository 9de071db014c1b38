# A 2-2 partition by link cut while all stream, 4 members in 4 VMs:
# {0,1} and {2,3} are put on bridges of their own 3 s into the stream.
# Neither side has a majority: every member stops, its group saying so
# (STOPPED and a failure upcall naming itself, both mentioning
# "majority"), and exits with status 3; no member installs a view. Then
# the links come back: the stopped members stay stopped (no split brain:
# still no view with epoch >= 1 anywhere, and their histories agree,
# vs_check), and a new run of all four on the healed network forms one
# group and streams in one order.
N=4
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
. "$SRC/tests/cluster/lib.sh"

# stopped RUN I: member I said it stopped for want of a majority.
stopped() {
    local f=$OUT/$1.$2.out
    wait_line "$f" "^STOPPED member=$2 .*majority" 120 ||
        fail "$1: member $2 did not stop for want of a majority within 120 s"
    # The two lines come from two threads, in either order.
    wait_line "$f" "^FAILURE member=$2 failed=$2 .*majority" 30 ||
        fail "$1: member $2's failure upcall did not name itself and the majority"
    echo "ok: $1: member $2 stopped: $(grep "^STOPPED" "$f")"
}

view_args
start_cluster 900 split after -- "${VIEW_ARGS[@]}"
go split
ready split 180
sleep 3
fault partition 0,1 2,3
t0=$FAULT_MS
for i in 0 1 2 3; do stopped split "$i"; done
echo "ok: split: all 4 members stopped within $(( $(now_ms) - t0 )) ms of the partition"
fault heal
sleep 2
exited split "0 1 2 3" 120 3
no_view_change split
judge split ""

go after
ready after 180
sleep 3
stop_streaming after
exited after "0 1 2 3" 300 0
no_view_change after
check_survivors after "0 1 2 3" "" 0,1,2,3 0
end_cluster 120
echo "PASS"
