# Heartbeats under a flood of large messages, 3 members (see
# view_common.sh and view_member.c): member 0 sends 12 MB messages (RDMC,
# 1 MB blocks) far faster than the link carries them, for 20 s, so that
# many transfers are under way at once; members 1 and 2 send nothing.
# Member 0's SST pushes, heartbeats included, share each queue pair with
# its block writes: however many transfers run, a push must not wait
# behind more block writes than the suspicion timeout (2 s here) can
# carry, or live members suspect each other. Every member must stay in
# the first view until member 0 stops, and close cleanly.
N=3
SETS=${SETS:-sst.suspect_timeout_ms=2000}
RATE=${RATE:-20}
. "$SRC/tests/vm/view_common.sh"

EXTRA[0]="--sizes 12000000"
EXTRA[1]="--rate 0"
EXTRA[2]="--rate 0"
start_members hb
sleep 20
stop_ms=$(now_ms)
stop_streaming hb
finish_members hb "0 1 2" 300 0
# Closing may end in views without the members that left first; a
# suspected member is named by a FAILURE line, and no view may change
# while member 0 streams.
for i in 0 1 2; do
    ! grep -q "^FAILURE " "$OUT/hb.$i.out" ||
        fail "hb: member $i: $(grep -m1 "^FAILURE " "$OUT/hb.$i.out")"
    early=$(awk -v s="$stop_ms" '$1 == "VIEW" && $3 != "epoch=0" {
        split($5, w, "="); if (w[2] + 0 < s + 0) { print; exit } }' "$OUT/hb.$i.out")
    [ -z "$early" ] || fail "hb: member $i changed views while member 0 streamed: $early"
done
sent=$(val "$OUT/hb.0.out" RESULT sent)
[ "${sent:-0}" -ge 4 ] || fail "hb: member 0 sent ${sent:-no} large messages, fewer than 4"
judge hb ""
echo "ok: hb: member 0 sent $sent messages of 12 MB in 20 s; no member was suspected"
echo "PASS"
