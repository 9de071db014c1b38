# In-place sends through a view change, 3 members: member 0 streams 12
# messages of 4 MiB from malloc'd memory with group_send_mem (each freed
# after its send returns), and member 2 is killed with kill -9 once the
# third has gone out. The survivors change view; a message the ending
# view's trim did not hold is sent again from the same memory, so every
# send returns 0, and members 0 and 1 deliver all 12, every byte checked,
# in one order.
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
until grep -q '^SEND round=2 ' "$OUT/fk.0.out"; do
    kill -0 "${PID[0]}" 2>/dev/null || fail "member 0 exited before its third send"
    [ "$t" -lt 3000 ] || fail "member 0 did not send 3 messages in 300 s"
    sleep 0.1; t=$((t + 1))
done
kill -9 "${PID[2]}"
finish 2 30
echo "ok: member 2 killed after member 0's third in-place send"
for i in 0 1; do
    finish "$i" 600
    [ "$RC" = 0 ] || fail "member $i exited with status $RC"
done
sent=$(grep -c '^SEND .* rc=0 ' "$OUT/fk.0.out")
[ "$sent" = 12 ] || fail "member 0's sends: $(grep '^SEND' "$OUT/fk.0.out")"
h0=$(sed -n 's/^FOREIGN .* hash=\([0-9a-f]*\).*/\1/p' "$OUT/fk.0.out")
for i in 0 1; do
    line=$(grep "^FOREIGN member=$i " "$OUT/fk.$i.out") || fail "member $i printed no result"
    case "$line" in *" delivered=12 bad=0 hash=$h0"*) ;; *) fail "member $i: $line (member 0: hash $h0)" ;; esac
done
grep -q 'copies=0 ' "$OUT/fk.0.out" || fail "member 0 copied: $(grep '^STATS' "$OUT/fk.0.out")"
grep -q '^STATS when=end .* epoch=[1-9]' "$OUT/fk.0.out" || fail "member 0 never changed view: $(grep '^STATS' "$OUT/fk.0.out")"
echo "ok: members 0 and 1 delivered the 12 in-place messages, every byte checked, one order (hash $h0), no copy ($(sed -n 's/^STATS when=end .*\( epoch=[0-9]* resent=[0-9]*\).*/\1/p' "$OUT/fk.0.out"))"
echo "PASS"
