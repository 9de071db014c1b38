# Heartbeats under a flood of large messages, 3 members (see
# view_common.sh and view_member.c): member 0 sends 12 MB messages (RDMC,
# 1 MB blocks) far faster than the link carries them, for 20 s, so that
# many transfers are under way at once; members 1 and 2 send nothing.
# Member 0's SST pushes, heartbeats included, share each queue pair with
# its block writes: however many transfers run, a push must not wait
# behind more block writes than the suspicion timeout (2 s here) can
# carry, or live members suspect each other. No member may be suspected,
# and every member closes cleanly.
N=3
SETS=${SETS:-sst.suspect_timeout_ms=2000}
RATE=${RATE:-20}
. "$SRC/tests/vm/view_common.sh"

EXTRA[0]="--sizes 12000000 --secs 20"
EXTRA[1]="--rate 0"
EXTRA[2]="--rate 0"
start_members hb
# Member 0 streams 20 s, then closes: it leaves once every member holds
# its messages. Only then do the others stop (members that leave one by
# one while its transfers are under way are another test's subject).
finish_members hb 0 300 0
stop_streaming hb
finish_members hb "1 2" 300 0
# A suspected member is named by a FAILURE line; the only view change is
# member 0's leave.
for i in 0 1 2; do
    ! grep -q "^FAILURE " "$OUT/hb.$i.out" ||
        fail "hb: member $i: $(grep -m1 "^FAILURE " "$OUT/hb.$i.out")"
done
[ -z "$(first_view_ms "$OUT/hb.0.out" 1)" ] ||
    fail "hb: member 0 changed views while it streamed"
for i in 1 2; do
    v=$(grep -m1 -E "^VIEW .* epoch=[1-9]" "$OUT/hb.$i.out" || true)
    [ -z "$v" ] || echo "$v" | grep -q " members=1,2 " ||
        fail "hb: member $i's first view change was not member 0's leave: $v"
done
sent=$(val "$OUT/hb.0.out" RESULT sent)
[ "${sent:-0}" -ge 4 ] || fail "hb: member 0 sent ${sent:-no} large messages, fewer than 4"
judge hb ""
echo "ok: hb: member 0 sent $sent messages of 12 MB in 20 s; no member was suspected"
echo "PASS"
