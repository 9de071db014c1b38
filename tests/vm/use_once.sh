# Use-once regions: member 1 opens regions over malloc'd memory and sends
# {address, rkey, length} in a wire-encoded P2P message; member 2
# RDMA-reads and checks every byte, answers, and at the end reads the last
# region again with the old rkey: that READ must fail with a remote access
# error. First on the window path (type-2 window, SEND_WITH_INV answer; the
# old key is tried while member 1 still holds the window and makes no
# call), then on the registration path (--no-window: plain SEND answer,
# member 1 deregisters). Last, member 2 reads member 1's region with the
# region's own key: peers may only write it, so that READ fails too.
. "$SRC/tests/vm/rdma_common.sh"
use_member use_once_member
pair() {
    local port=$1 what=$2
    shift 2
    run_member 2 --port "$port"
    run_member 1 --port "$port" --transfers 6 "$@"
    for i in 2 1; do
        finish "$i" 150; rc=$RC
        [ "$rc" = 0 ] || fail "$what: member $i exited with status $rc"
    done
}
check_pair() {
    local path=$1 answer=$2 after=$3
    for t in 1 2 3 4 5 6; do
        expect "$OUT/1.out" "member 1 transfer $t: path=$path rkey=0x[0-9a-f]+ " "$path: transfer $t path"
        expect "$OUT/2.out" "member 2 transfer $t: read [0-9]+ bytes with rkey 0x[0-9a-f]+, all verified; answered with $answer\$" "$path: transfer $t verified"
    done
    expect "$OUT/2.out" "member 2 RDMA READ with the old rkey 0x[0-9a-f]+ after the $after: failed with .*: remote access error" "$path: old rkey refused"
    for i in 1 2; do show "$i"; done
}

pair 7660 window
check_pair window SEND_WITH_INV SEND_WITH_INV
[ "$(grep -c 'answered with invalidation' "$OUT/1.out")" = 6 ] || fail "window: not every answer invalidated its window"
expect "$OUT/1.out" "member 1 use-once: windows=6 registrations=0 remote_invalidations=6 local_invalidations=0" "window: counters"
win=$(grep "RDMA READ with the old rkey" "$OUT/2.out")

pair 7680 registration --no-window
check_pair registration SEND deregistration
expect "$OUT/1.out" "member 1 use-once: windows=0 registrations=6 remote_invalidations=0 local_invalidations=0" "registration: counters"
reg=$(grep "RDMA READ with the old rkey" "$OUT/2.out")

# A peer may write a member's region, never read it: a READ with the
# region's own key fails with a remote access error.
run_member 1 --port 7700 --read-region
run_member 2 --port 7700 --read-region
for i in 2 1; do
    finish "$i" 150
    [ "$RC" = 0 ] || fail "read-region: member $i exited with status $RC"
done
expect "$OUT/2.out" "member 2 RDMA READ of member 1's region .*: failed with .*: remote access error" "read-region: the region cannot be read"
rd=$(grep "RDMA READ of member 1's region" "$OUT/2.out")
echo "PASS: 6 use-once transfers on each path, every byte verified; window path: $win; registration path: $reg; $rd"
