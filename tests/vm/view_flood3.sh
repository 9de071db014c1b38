# Point-to-point floods beside the ordered stream, 3 members (see
# view_common.sh and view_member.c): every member streams ordered
# messages (small ones on SMC, 200 KB ones on RDMC) while a second thread
# sends point-to-point messages to the next member as fast as the group
# takes them. They share each queue pair's send queue with the SST, SMC
# and RDMC: a full send queue must put those off, never stop them, and
# point-to-point sends beyond what may be in flight are refused (-EAGAIN)
# instead of taking the room. Every member must close with everything
# delivered (vs_check), and each member must have received exactly the
# point-to-point messages its neighbour's sends were accepted for.
# Then the same with member 2 killed (kill -9) after 3 s: the survivors
# change view with point-to-point messages in flight on the old view's
# connections, whose completions must all come back before its node goes
# (group_stats p2p_abandoned 0: no buffer lost with it), and each of
# member 0's messages to member 1, which survives with it, arrived or was
# reported through send_failed.
# Then member 2 misbehaves: its 200th point-to-point message goes out as
# bytes nobody can read (--fail-at p2p_garbage:200). Member 0, which
# receives it, must not stop itself: it suspects member 2 and cuts its
# connection, the view change removes member 2 (which finds itself out),
# and members 0 and 1 go on with identical sequences, their failure
# upcalls saying why.
# Then nobody can stall the join path: while the three stream, 50 TCP
# connections to member 0's join port never send a byte, and 1,000 more
# send join requests that are garbage, too long, or from a stranger;
# member 2 is killed meanwhile. The view change that removes it must
# still end within 5 s (the view thread reads join connections without
# blocking, 16 at a time, each message at most 256 bytes within 2 s), and
# nothing is lost.
N=3
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
. "$SRC/tests/vm/view_common.sh"

start_members flood --p2p-flood
sleep 6
stop_streaming flood
finish_members flood "0 1 2" 300 0
check_survivors flood "0 1 2" "" 0,1,2 0
refused=0
for i in 0 1 2; do
    f=$OUT/flood.$i.out
    to=$(val "$f" "P2P " to)
    sent=$(val "$f" "P2P " sent)
    got=$(val "$OUT/flood.$to.out" "P2PFROM member=$to sender=$i " count)
    [ "${sent:-0}" -gt 0 ] || fail "flood: member $i sent no point-to-point message"
    [ "${got:-0}" = "$sent" ] ||
        fail "flood: member $i's $sent point-to-point messages to member $to were accepted; member $to received ${got:-0}"
    refused=$((refused + $(val "$f" "P2P " refused)))
    echo "ok: flood: member $i -> $to: $sent point-to-point messages, all received, $(val "$f" "P2P " refused) refused while $((64)) were in flight"
done
[ "$refused" -gt 0 ] || fail "flood: no point-to-point send was refused: the flood never filled what may be in flight"

start_members floodkill --p2p-flood
sleep 3
kill_member 2
wait_views floodkill "0 1" 1 120
sleep 3
stop_streaming floodkill
finish_members floodkill "0 1" 300 0
check_survivors floodkill "0 1" 2 0,1 "${KILL_MS[2]}"
for i in 0 1; do
    a=$(val "$OUT/floodkill.$i.out" "P2P " abandoned)
    [ "$a" = 0 ] || fail "floodkill: member $i lost $a point-to-point sends with the old view's connections"
done
echo "ok: floodkill: no point-to-point send was abandoned with the old view ($(for i in 0 1; do echo -n "$i: $(val "$OUT/floodkill.$i.out" "P2P " sent) sent "; done))"
# Member 0 floods member 1, which survives with it: each message accepted
# arrived (in the old view or, taken as its connections closed, in the
# new one) or was reported through send_failed.
check_p2p floodkill 0 1

EXTRA=([2]="--fail-at p2p_garbage:200")
start_members garbage --p2p-flood
wait_views garbage "0 1" 1 180
wait_line "$OUT/garbage.2.out" "^STOPPED member=2 " 120 "${PID[2]}" ||
    fail "garbage: member 2 did not find itself out within 120 s"
finish_members garbage 2 120 3
sent_at=$(val "$OUT/garbage.2.err" "FAILING " wall_ms)
[ -n "$sent_at" ] || fail "garbage: member 2 sent no unreadable message"
sleep 2
stop_streaming garbage
finish_members garbage "0 1" 300 0
check_survivors garbage "0 1" 2 0,1 "$sent_at"
# Member 0 received it and says why; member 1 learnt it from member 0.
grep -q "^FAILURE member=0 failed=2 .*why=member 2 misbehaved: it sent a message this member cannot read" "$OUT/garbage.0.out" ||
    fail "garbage: member 0's failure upcall for member 2 does not say it misbehaved: $(grep "^FAILURE member=0 " "$OUT/garbage.0.out" | head -n1)"
grep -q "^FAILURE member=1 failed=2 " "$OUT/garbage.1.out" ||
    fail "garbage: member 1 was not told member 2 failed"
[ "$(val "$OUT/garbage.0.out" RESULT misbehaved)" = 1 ] ||
    fail "garbage: member 0 counted $(val "$OUT/garbage.0.out" RESULT misbehaved) misbehaving peers, not 1"
echo "ok: garbage: member 2's unreadable message removed member 2, not member 0 ($(grep "^FAILURE member=0 failed=2 " "$OUT/garbage.0.out" | head -n1 | sed 's/.* why=//'))"
EXTRA=()
start_members joinflood
sleep 2
silent=()
for i in $(seq 50); do
    exec {fd}<>/dev/tcp/10.77.0.1/7400 || fail "joinflood: could not open join connection $i"
    silent+=("$fd")
done
bogus() {
    local i
    for i in $(seq 1000); do
        case $((i % 3)) in
        0) printf 'GARBAGE%05d' "$i" ;;
        1) printf 'SQAL\001\000\000\000\064\000\000\000\000\000\000\000\377\377\377\377' ;;
        2) head -c 300 /dev/urandom ;;
        esac >/dev/tcp/10.77.0.1/7400 2>/dev/null || true
    done
}
bogus &
flood=$!
sleep 1
kill_member 2
wait_views joinflood "0 1" 1 120
wait "$flood"
for fd in "${silent[@]}"; do exec {fd}>&-; done
sleep 2
stop_streaming joinflood
finish_members joinflood "0 1" 300 0
check_survivors joinflood "0 1" 2 0,1 "${KILL_MS[2]}" 5000
dropped=$(val "$OUT/joinflood.0.out" RESULT joins_dropped)
[ "${dropped:-0}" -ge 50 ] ||
    fail "joinflood: member 0 dropped ${dropped:-0} join connections, fewer than the 50 silent ones"
echo "ok: joinflood: the view change ended in $VIEW_MS ms with 50 silent and 1,000 bogus join connections; member 0 dropped $dropped of them unanswered"
echo "PASS"
