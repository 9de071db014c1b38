# A member that writes outside what a peer granted it, 4 members, with a
# test-hook build (view_member --fail-at, rdma/hook.h) and the default
# group.peer_access "windows": every peer writes a member's region only
# through memory windows over exactly its row in the member's SST, its
# SMC ring there, and each RDMC receive buffer while its transfer runs.
# Each round one member writes once where it may not while all stream:
#  - sst: member 1 pushes its row one row further (into the next
#    member's row) in a peer's table (its 300th push);
#  - ring: member 2 writes an SMC record one ring further (into the next
#    sender's ring) in a peer's region (its 100th ring write);
#  - rdmc: member 3 writes a block of a large message into the buffer,
#    and with the key, that a receiver granted for its previous large
#    message, whose transfer has ended (its window is closed).
# Each time the peer refuses the write (the writer's completion says
# "remote access error") and the connection breaks at both ends; the peer
# suspects the writer, the writer does not suspect the peer for it, and
# the view change removes the writer, whose group stops (STOPPED, exit
# status 3) naming the refused write first; the others install a view of
# exactly themselves, deliver identical sequences (vs_check) and report
# no one else failed.
N=4
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
. "$SRC/tests/vm/view_common.sh"

# stray_round NAME WRITER POINT SURVIVORS MEMBERS
stray_round() {
    local name=$1 w=$2 point=$3 surv=$4 members=$5 why
    EXTRA=([$w]="--fail-at $point")
    start_members "$name"
    wait_line "$OUT/$name.$w.out" "^STOPPED member=$w " 240 "${PID[$w]}" ||
        fail "$name: member $w did not stop within 240 s of its start$(stop_note "$name" "$w")"
    finish "$w" 120
    [ "$RC" = 3 ] || fail "$name: member $w exited with status $RC, not 3 (its group stopped)"
    why=$(sed -n "s/^STOPPED member=$w code=[-0-9]* why=//p" "$OUT/$name.$w.out")
    echo "$why" | grep -Eq "^member $w: member [0-9]+ refused an? [^;]* of this member.s( SST row)? \(remote access error\)" ||
        fail "$name: member $w stopped, but not for its stray write: $why"
    grep -q "^FAILING .*why=test hook $point" "$OUT/$name.$w.err" ||
        fail "$name: member $w's hook $point did not fire"
    echo "ok: $name: member $w wrote outside its grant and was removed: $why"
    unset "PID[$w]"
    KILL_MS[$w]=$(val "$OUT/$name.$w.err" "FAILING " wall_ms)
    end_round "$name" "$surv" "$w" "$members"
}

stray_round sst 1 stray_sst:300 "0 2 3" 0,2,3
stray_round ring 2 stray_ring:100 "0 1 3" 0,1,3
SETS="$SETS rdmc.block_size=16K"
stray_round rdmc 3 stray_rdmc "0 1 2" 0,1,2
echo "PASS"
