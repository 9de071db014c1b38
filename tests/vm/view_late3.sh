# A large message whose transfer ends after the view change delivered its
# trim, 3 members (see view_common.sh and view_member.c): member 0 streams
# 12 MB messages (RDMC, one after another), member 1 small ones, and
# member 2 sends nothing and leaves (group_close) after 3 s, so the view
# change starts while one of member 0's transfers is under way and leaves
# it past the trim (member 0 sends it again in the next view). Every
# member's view end waits 3 s before its teardown (--fail-at
# teardown_late): the transfer goes on meanwhile and ends in the old view,
# after its record went with the trim. Its receive buffer must go back to
# the region: once everyone stopped, member 1 (which released every
# delivery) may hold no large message's buffer in the delivered state
# (--check-unheld), and every message is delivered once, in one order
# (vs_check).
N=3
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-20}
. "$SRC/tests/vm/view_common.sh"

EXTRA[0]="--sizes 12000000"
EXTRA[1]="--sizes 64,1000 --check-unheld"
EXTRA[2]="--rate 0 --secs 3"
start_members late --fail-at teardown_late
finish_members late 2 120 0
wait_views late "0 1" 1 120
sleep 3
stop_streaming late
# Member 1 says UNHELD first: its exit status (checked before the line)
# would only say that something was wrong.
for i in 0 1; do finish "$i" 300; STATUS[$i]=$RC; done
unheld=$(val "$OUT/late.1.out" UNHELD count)
[ "$unheld" = 0 ] ||
    fail "late: member 1 holds ${unheld:-no UNHELD line} delivered buffers nobody was handed (a receive buffer lost to the region)"
for i in 0 1; do
    [ "${STATUS[$i]}" = 0 ] || fail "late: member $i exited with status ${STATUS[$i]}, not 0"
done
# Whoever of 0 and 1 closes first leaves the other a view of its own:
# the histories, not the last view, are what to judge.
judge late ""
big=$(val "$OUT/late.0.out" RESULT sent)
[ "${big:-0}" -gt 0 ] || fail "late: member 0 sent no large message"
echo "ok: late: member 0 sent $big messages of 12 MB, $(val "$OUT/late.0.out" STATS resent) of them again after the view change; member 1 holds no delivered buffer it was not handed"
echo "PASS"
