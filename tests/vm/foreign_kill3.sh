# In-place sends through a view change, 3 members: member 0 sends one
# message of 4 MiB from a mapping it keeps, then streams 12 more from
# malloc'd memory with group_send_mem (each freed after its send
# returns), and member 2 is killed with kill -9 once the third of those
# has gone out. The survivors change view; a message the ending view's
# trim did not hold is sent again from the same memory, so every send
# returns 0. In the next view member 0 sends from the kept mapping again:
# its registration, made in the first view, is still cached (a hit, no
# miss). Members 0 and 1 deliver all 14, every byte checked, in one order.
N=3
. "$SRC/tests/vm/group_common.sh"
FM=$BUILD/tests/vm/foreign_member
[ -x "$FM" ] || fail "$FM is not built"

for i in 0 1 2; do
    "$FM" --config "$CFG" --id "$i" --set group.copy_threshold=64K --stream 12 \
        >"$OUT/fk.$i.out" 2>"$OUT/fk.$i.err" &
    PID[$i]=$!
done
t=0
until grep -q '^SEND round=3 ' "$OUT/fk.0.out"; do
    kill -0 "${PID[0]}" 2>/dev/null || fail "member 0 exited before its third streamed send"
    [ "$t" -lt 3000 ] || fail "member 0 did not stream 3 messages in 300 s"
    sleep 0.1; t=$((t + 1))
done
kill -9 "${PID[2]}"
finish 2 30
echo "ok: member 2 killed after member 0's third streamed send"
for i in 0 1; do
    finish "$i" 600
    [ "$RC" = 0 ] || fail "member $i exited with status $RC"
done
sent=$(grep -c '^SEND .* rc=0 ' "$OUT/fk.0.out")
[ "$sent" = 14 ] || fail "member 0's sends: $(grep '^SEND' "$OUT/fk.0.out")"
h0=$(sed -n 's/^FOREIGN .* hash=\([0-9a-f]*\).*/\1/p' "$OUT/fk.0.out")
for i in 0 1; do
    line=$(grep "^FOREIGN member=$i " "$OUT/fk.$i.out") || fail "member $i printed no result"
    case "$line" in *" delivered=14 bad=0 hash=$h0"*) ;; *) fail "member $i: $line (member 0: hash $h0)" ;; esac
done
grep -q 'copies=0 ' "$OUT/fk.0.out" || fail "member 0 copied: $(grep '^STATS' "$OUT/fk.0.out")"
grep -q '^STATS when=end .* epoch=[1-9]' "$OUT/fk.0.out" || fail "member 0 never changed view: $(grep '^STATS' "$OUT/fk.0.out")"
echo "ok: members 0 and 1 delivered the 14 in-place messages, every byte checked, one order (hash $h0), no copy ($(sed -n 's/^STATS when=end .*\( epoch=[0-9]* resent=[0-9]*\).*/\1/p' "$OUT/fk.0.out"))"
# The mapping member 0 sent from in view 0 and again in view 1: its
# registration outlived the view change in the registration cache.
stat() { # WHEN KEY: KEY's value in member 0's STATS line of WHEN
    awk -v w="when=$1" -v k="$2" '$1 == "STATS" && $2 == w {
        for (i = 3; i <= NF; i++) { split($i, p, "="); if (p[1] == k) print p[2] } }' "$OUT/fk.0.out"
}
[ "$(stat kept_before epoch)" -ge 1 ] || fail "member 0 sent the kept mapping again in epoch $(stat kept_before epoch)"
[ "$(stat kept_after cache_misses)" = "$(stat kept_before cache_misses)" ] &&
    [ "$(stat kept_after cache_hits)" -gt "$(stat kept_before cache_hits)" ] ||
    fail "the view change lost the kept mapping's registration: $(grep '^STATS when=kept' "$OUT/fk.0.out")"
echo "ok: the mapping sent in view 0 was a cache hit in epoch $(stat kept_after epoch): $(grep '^STATS when=kept_after' "$OUT/fk.0.out")"
echo "PASS"
