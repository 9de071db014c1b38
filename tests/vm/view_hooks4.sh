# Deaths at named protocol points, 4 members, with a test-hook build
# (view_member --die-at, rdma/hook.h): the member kills itself, as kill -9
# would, at the exact step instead of at a time the script guessed.
# The first three rounds need a view change to be under way when the
# victim dies: member 3 leaves in order (it closes after 3 s; members that
# leave count on neither side of the majority), and then
#  - published: the leader, member 0, dies right after pushing the trim
#    it computed (some members may have adopted it, some not);
#  - adopted: member 1 dies right after pushing its adoption;
#  - installing: member 2 dies after tearing its old view down, before
#    building the next (the others install without it, miss it there and
#    drop it in the next change);
#  - connected: member 0 ends its old view 3 s late (--fail-at
#    teardown_late), and member 2 is killed 1 s into that wait, when it
#    has connected to member 1 for the next view and both wait for
#    member 0. A member that dies after it connected is a failure for the
#    next change to deal with, not a refusal: members 0 and 1 install
#    the view with it and go on without it;
#  - rdmc_mid: with no other change, member 1 dies holding half the
#    blocks of its 10th large message (rdmc.block_size 16K: 200 KB
#    messages are 13 blocks); every survivor then has messages to send
#    again, and its view upcall tries a send (--view-send), which must be
#    refused;
#  - resend: as rdmc_mid, and member 0's group fails while it sends its
#    messages again (test hook resend_stop);
#  - rings: as rdmc_mid, and member 0's build of the next view fails
#    (test hook rings_lease);
#  - stopped: member 3 leaves in order, and member 1 stops right after
#    adopting the trim (test hook stop_adopted), so the others install
#    the next view with it;
#  (in rings and stopped, the member that stops keeps its process 30 s
#    before it closes its group, --linger-stopped: the survivors must
#    find it gone from what it answers, or from nothing listening where
#    it kept its listener, in well under that);
#  - refused: member 2 cannot lease the buffer of its 5th large message
#    (--fail-at rdmc_lease:5) and says so to the sender, which dies the
#    moment it learns it (every other member has --die-at rdmc_refused):
#    the cancellation never comes, so no member may have delivered past
#    that message when the view change decides (member 2 least of all:
#    it must wait like the others, not skip it on its own).
# Each round: the survivors end in a view of exactly themselves, their
# histories pass vs_check, the leaver is reported by no one, and every
# failure upcall names the victim (see view_common.sh).
# The first three victims die with the next view decided, so the
# survivors install it with them in it. A survivor keeps its listener
# from one view to the next: one whose address has no listener is gone,
# and the survivors drop it without waiting for group.view_timeout_ms.
# Here that is an hour: a round that waited for it would fail end_round's
# 180 s.
N=4
SETS=${SETS:-sst.suspect_timeout_ms=4000 group.view_timeout_ms=3600000}
RATE=${RATE:-100}
. "$SRC/tests/vm/view_common.sh"

# hook_round NAME VICTIM POINT LEAVER SURVIVORS MEMBERS [ARG...]: ARGs
# go to every member.
hook_round() {
    local name=$1 victim=$2 point=$3 leaver=$4 surv=$5 members=$6 i
    shift 6
    EXTRA=([$victim]="--die-at $point")
    [ -z "$leaver" ] || EXTRA[$leaver]="--secs 3"
    start_members "$name" "$@"
    wait_line "$OUT/$name.$victim.err" "^DYING " 180 "${PID[$victim]}" ||
        fail "$name: member $victim did not reach $point within 180 s$(stop_note "$name" "$victim")"
    reap_member "$name" "$victim"
    echo "ok: $name: member $victim died at $point: $(grep -h '^DYING' "$OUT/$name.$victim.err")"
    if [ -n "$leaver" ]; then
        finish "$leaver" 180
        [ "$RC" = 0 ] || fail "$name: member $leaver, leaving, exited with status $RC"
    fi
    end_round "$name" "$surv" "$victim" "$members"
}

hook_round published 0 trim_published 3 "1 2" 1,2
hook_round adopted 1 trim_adopted 3 "0 2" 0,2
hook_round installing 2 installing 3 "0 1" 0,1
EXTRA=([0]="--fail-at teardown_late" [3]="--secs 3")
start_members connected
wait_line "$OUT/connected.0.err" "^FAILING " 180 "${PID[0]}" ||
    fail "connected: member 0's hook teardown_late did not fire within 180 s$(stop_note connected 0)"
sleep 1
kill_member 2
finish 3 180
[ "$RC" = 0 ] || fail "connected: member 3, leaving, exited with status $RC"
end_round connected "0 1" 2 0,1
grep -q "^VIEW member=1 epoch=1 members=0,1,2 " "$OUT/connected.1.out" ||
    fail "connected: member 1 did not install the view of 0, 1 and 2 first"
echo "ok: connected: member 2 died connected to member 1 for the next view; members 0 and 1 installed it and went on"
SETS="$SETS rdmc.block_size=16K"
hook_round rdmc_mid 1 rdmc_mid:10 "" "0 2 3" 0,2,3 --view-send
# Every survivor's view upcall tried a send (--view-send) while it had
# messages past the trim to send again: refused, as an upcall's send is
# during a view change; taken, it would have gone before them.
for i in 0 2 3; do
    [ "$(val "$OUT/rdmc_mid.$i.out" VIEWSEND tried)" = 1 ] &&
        [ "$(val "$OUT/rdmc_mid.$i.out" VIEWSEND refused)" = 1 ] ||
        fail "rdmc_mid: member $i's send from its view upcall was not refused: $(grep -h '^VIEWSEND' "$OUT/rdmc_mid.$i.out")"
done
echo "ok: rdmc_mid: a send from each survivor's view upcall was refused (-EAGAIN)"

# stopped_soon NAME I SURVIVORS: member I's group stopped at a test hook
# (its FAILING line) and its process lingers (--linger-stopped 30): the
# survivors' view of exactly SURVIVORS (comma-separated) came within
# 15 s of the hook. Waiting for I itself instead (group.view_timeout_ms
# is an hour here) would take until its process ends.
stopped_soon() {
    local name=$1 victim=$2 members=$3 t0 t i
    t0=$(val "$OUT/$name.$victim.err" "FAILING " wall_ms)
    [ -n "$t0" ] || fail "$name: member $victim printed no FAILING line"
    for i in ${members//,/ }; do
        t=$(grep -E "^VIEW member=$i epoch=[0-9]+ members=$members " "$OUT/$name.$i.out" |
            head -n1 | sed -n 's/.* wall_ms=\([0-9]*\).*/\1/p')
        [ -n "$t" ] || fail "$name: member $i printed no view of $members"
        [ $((t - t0)) -lt 15000 ] ||
            fail "$name: member $i installed the view of $members $((t - t0)) ms after member $victim stopped (its process still ran): it waited for a member that had stopped"
        echo "ok: $name: member $i installed the view of $members $((t - t0)) ms after member $victim stopped"
    done
}

# resend_round NAME POINT [ARG...]: as rdmc_mid, and member 0's group
# fails at POINT (a test hook of view_member --fail-at) while it installs
# the view of 0, 2 and 3, its own messages past the trim still to be
# sent again; ARGs go to member 0.
# The application must learn of each of its sends exactly once: delivered
# by the others, or told lost (send_failed); member 0 stops (exit status
# 3), 2 and 3 go on in a view of themselves.
resend_round() {
    local name=$1 point=$2
    shift 2
    EXTRA=([0]="--fail-at $point $*" [1]="--die-at rdmc_mid:10")
    start_members "$name"
    wait_line "$OUT/$name.1.err" "^DYING " 180 "${PID[1]}" ||
        fail "$name: member 1 did not reach rdmc_mid within 180 s$(stop_note "$name" 1)"
    reap_member "$name" 1
    wait_line "$OUT/$name.0.out" "^STOPPED member=0 " 240 "${PID[0]}" || {
        finish 0 1
        fail "$name: member 0 did not stop within 240 s (exit status $RC; 124: it still ran, and was killed; above 128: signal RC - 128)$(stop_note "$name" 0)"
    }
    finish 0 120
    [ "$RC" = 3 ] || fail "$name: member 0 exited with status $RC, not 3 (its group stopped): $(tail -n3 "$OUT/$name.0.err")"
    grep -q "^FAILING .*why=test hook $point" "$OUT/$name.0.err" ||
        fail "$name: member 0's hook $point did not fire"
    end_round "$name" "2 3" "1 0" 2,3
    check_unsent "$name" 0 "2 3"
}

# resend: the group fails as the view thread is about to send the first
# of them (test hook resend_stop).
resend_round resend resend_stop
# rings_lease: building the view of 0, 2 and 3 fails on member 0 (its
# region has no room for the rings: test hook rings_lease, at its second
# passage, the first view's build being the first): what it was to send
# again goes in no view.
resend_round rings rings_lease:2 --linger-stopped 30
stopped_soon rings 0 2,3

# stopped: the view of 0, 1 and 2 is decided when member 1 stops; its
# node, still up, refuses the others' requests saying it stopped.
EXTRA=([1]="--fail-at stop_adopted --linger-stopped 30" [3]="--secs 3")
start_members stopped
wait_line "$OUT/stopped.1.out" "^STOPPED member=1 " 180 "${PID[1]}" ||
    fail "stopped: member 1 did not stop within 180 s$(stop_note stopped 1)"
grep -q "^FAILING .*why=test hook stop_adopted" "$OUT/stopped.1.err" ||
    fail "stopped: member 1's hook stop_adopted did not fire"
KILL_MS[1]=$(val "$OUT/stopped.1.err" "FAILING " wall_ms)
finish 3 180
[ "$RC" = 0 ] || fail "stopped: member 3, leaving, exited with status $RC"
# Member 1's history is whole once it closed: the survivors' views
# first (they come while it lingers), then its end, then theirs.
wait_members_view stopped "0 2" 0,2
finish 1 120
[ "$RC" = 3 ] || fail "stopped: member 1 exited with status $RC, not 3 (its group stopped)"
end_round stopped "0 2" 1 0,2
grep -q "^VIEW member=0 epoch=1 members=0,1,2 " "$OUT/stopped.0.out" ||
    fail "stopped: member 0 did not install the view of 0, 1 and 2 first"
stopped_soon stopped 1 0,2

EXTRA=([0]="--die-at rdmc_refused" [1]="--die-at rdmc_refused"
       [2]="--fail-at rdmc_lease:5" [3]="--die-at rdmc_refused")
start_members refused
line=$(wait_any "^DYING " 180 "${PID[0]} ${PID[1]} ${PID[3]}" "$OUT"/refused.[013].err) ||
    fail "refused: no sender died on member 2's refusal within 180 s"
victim=
for i in 0 1 3; do
    grep -q "^DYING " "$OUT/refused.$i.err" && victim=$i
done
reap_member refused "$victim"
echo "ok: refused: member 2 refused a large message of member $victim, which died: $line"
surv=$(echo 0 1 2 3 | tr ' ' '\n' | grep -vx "$victim" | tr '\n' ' ')
surv=${surv% }
end_round refused "$surv" "$victim" "${surv// /,}"
echo "PASS"
