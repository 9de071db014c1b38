# A partition with no majority, 4 members: members 2 and 3 are stopped
# (SIGSTOP) while all stream. 0 and 1 (2 of 4) must not form a view: each
# stops, its group saying it lost the majority (a STOPPED line and a
# failure upcall naming itself, both mentioning "majority"), and exits
# with status 3 (view_member: the group stopped). Then 2 and 3 continue
# (SIGCONT): they find 0 and 1 gone and must stop the same way. No member
# installs a view with epoch >= 1.
N=4
# Suspicion at 4 s: the members share the VM's two emulated CPUs with
# each other and the host's load, and a heartbeat late by 1-2 s there
# is not a failure.
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
. "$SRC/tests/vm/view_common.sh"

# stopped NAME I: member I said it stopped for want of a majority.
stopped() {
    local f=$OUT/$1.$2.out
    wait_line "$f" "^STOPPED member=$2 .*majority" 120 "${PID[$2]:-}" ||
        fail "$1: member $2 did not stop for want of a majority within 120 s$(stop_note "$1" "$2")"
    grep -Eq "^FAILURE member=$2 failed=$2 .*majority" "$f" ||
        fail "$1: member $2's failure upcall did not name itself and the majority"
    echo "ok: $1: member $2 stopped: $(grep "^STOPPED" "$f")"
}

start_members split
sleep 3
kill -STOP "${PID[2]}" "${PID[3]}"
t0=$(now_ms)
for i in 0 1; do stopped split "$i"; done
echo "ok: split: members 0 and 1 stopped within $(( $(now_ms) - t0 )) ms of the partition"
finish_members split "0 1" 120 3
kill -CONT "${PID[2]}" "${PID[3]}"
for i in 2 3; do stopped split "$i"; done
finish_members split "2 3" 120 3
grep -E "^VIEW .* epoch=[1-9]" "$OUT"/split.*.out && fail "split: a member installed a view without a majority"
echo "ok: split: no member installed a view with epoch >= 1"
judge split ""
echo "PASS"
