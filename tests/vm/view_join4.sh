# A member joins while the others stream and flood each other with
# point-to-point messages, 4 members of conf/local-join4.cfg (see
# view_common.sh and view_member.c): members 0, 1 and 2 form the first
# view; member 3 joins it (view_member --join). Its state is every
# sender's next counter, so the joiner checks each sender's counters from
# where the view before it ended, as the others do. state_save takes
# 1.5 s (--state-save-ms: an application with much state), and meanwhile
# point-to-point messages keep arriving at the member that runs it.
# Upcalls never run two at a time (group.h): a point-to-point message that
# arrives during state_save waits for it to return, then is delivered, on
# the progress thread as ever. Every view_member counts an upcall that
# began while another ran on another thread (RESULT overlaps), and any
# such run fails here. Checked: every member ends in the view 0,1,2,3 with
# nothing damaged, duplicated or missing (vs_check over the four
# histories, the joiner's from its first view), the state was saved once
# and loaded by the joiner, and no upcall overlapped another. A
# point-to-point message whose connection closes first (the receiver
# went on to the next view while the sender still sent on the old one)
# is not lost unseen: each one accepted was received or reported through
# send_failed.
#
# Round kill: the same join without the flood, and the member that is
# neither the joiner nor the one saving the state is killed as soon as
# the script sees state_save begin (0.4-0.6 s into it in the VM; the
# line says), when it is already connecting for the joiner's view. The
# joiner is told which members kept their listeners (wire 1.2), so it
# finds the dead one gone as the survivors do, instead of waiting
# group.view_timeout_ms (10 s here) for it to connect while the others
# wait as long for the joiner's grants (which of the two waits ended first
# decided whether the group went on). Checked: the view with the joiner
# is installed everywhere within 6 s of the kill, the next drops the dead
# member, and the three left agree (vs_check).
N=3  # the first view; member 3 joins it
CFG=${CFG:-$SRC/conf/local-join4.cfg}
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
SAVE_MS=1500
. "$SRC/tests/vm/view_common.sh"

EXTRA=([0]="--state-save-ms $SAVE_MS" [1]="--state-save-ms $SAVE_MS" [2]="--state-save-ms $SAVE_MS")
start_members join --p2p-flood
sleep 2
start_member join 3 --join --p2p-flood
wait_line "$OUT/join.3.out" "^READY member=3\$" 180 "${PID[3]}" ||
    fail "join: member 3 did not join within 180 s$(stop_note join 3)"
for i in 0 1 2 3; do
    wait_line "$OUT/join.$i.out" "^VIEW .* members=0,1,2,3 " 120 "${PID[$i]}" ||
        fail "join: member $i installed no view of 0,1,2,3 within 120 s$(stop_note join "$i")"
done
sleep 3
stop_streaming join
finish_members join "0 1 2 3" 300 0
check_survivors join "0 1 2 3" "" 0,1,2,3 0
saver=
for i in 0 1 2; do
    s=$(val "$OUT/join.$i.out" "STATE " saved)
    case ${s:-0} in
    0) ;;
    1) [ -z "$saver" ] || fail "join: members $saver and $i both saved the state"; saver=$i ;;
    *) fail "join: member $i saved the state $s times" ;;
    esac
done
[ -n "$saver" ] || fail "join: no member saved the state"
[ "$(val "$OUT/join.3.out" "STATE " loaded)" = 1 ] || fail "join: the joiner did not load the state"
for i in 0 1 2 3; do
    [ "$(val0 "$OUT/join.$i.out" "P2P " sent)" -gt 0 ] ||
        fail "join: member $i sent no point-to-point message"
    check_p2p join "$i" "$(val "$OUT/join.$i.out" "P2P " to)"
done
echo "ok: join: member $saver saved the state in $SAVE_MS ms while point-to-point messages came in; no upcall overlapped another"

# Round kill, with the first round's state_save (EXTRA).
SETS="$SETS group.view_timeout_ms=10000"
start_members kill
sleep 2
start_member kill 3 --join
line=$(wait_any "^SAVING member=" 180 "${PID[0]} ${PID[1]} ${PID[2]}" "$OUT"/kill.[012].out) ||
    fail "kill: no member began state_save within 180 s"
keyv saver "$line" member
victim=2
[ "$saver" != 2 ] || victim=1
kill_member "$victim"
surv=$(for i in 0 1 2 3; do [ "$i" = "$victim" ] || printf '%s ' "$i"; done)
surv=${surv% }
members=${surv// /,}
for i in $surv; do
    wait_line "$OUT/kill.$i.out" "^VIEW .* members=$members " 120 "${PID[$i]}" ||
        fail "kill: member $i installed no view of $members within 120 s$(stop_note kill "$i")"
done
stop_streaming kill
finish_members kill "$surv" 300 0
[ "$(val "$OUT/kill.3.out" "STATE " loaded)" = 1 ] || fail "kill: the joiner did not load the state"
keyv saving "$line" wall_ms
echo "ok: kill: member $saver saved the state; member $victim was killed $((KILL_MS[$victim] - saving)) ms into it; the joiner on it: $(grep -m1 "^FAILURE member=3 failed=$victim " "$OUT/kill.3.out")"
check_survivors kill "$surv" "$victim" "$members" "${KILL_MS[$victim]}" 6000
