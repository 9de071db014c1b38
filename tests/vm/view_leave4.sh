# A clean leave, 4 members (see view_common.sh and view_member.c): every
# member streams; member 3 stops after 3 s and calls group_close while the
# others go on. Its close returns 0 once every message it sent is
# delivered everywhere; members 0, 1 and 2 install a view without it (no
# failure reported) and stream on. Every survivor delivered every one of
# member 3's messages, and per epoch the same messages in one order.
N=4
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
. "$SRC/tests/vm/view_common.sh"

EXTRA[3]="--secs 3"
start_members leave
finish_members leave 3 120 0
wait_views leave "0 1 2" 1 120
sleep 2
stop_streaming leave
finish_members leave "0 1 2" 300 0
check_survivors leave "0 1 2" "" 0,1,2 0
sent3=$(val "$OUT/leave.3.out" RESULT sent)
[ -n "$sent3" ] && [ "$sent3" -gt 0 ] || fail "leave: member 3 sent nothing"
for i in 0 1 2; do
    got=$(val "$OUT/leave.$i.out" "FROM member=$i sender=3 " count)
    [ "$got" = "$sent3" ] || fail "leave: member $i delivered $got of the $sent3 messages member 3 sent before leaving"
    grep -q "^FAILURE member=$i failed=3 " "$OUT/leave.$i.out" &&
        fail "leave: member $i reported member 3's leave as a failure"
done
echo "ok: leave: member 3 left after sending $sent3 messages; members 0, 1, 2 delivered all of them and went on in a view without it"
echo "PASS"
