# The stats file (group.stats_file) and squall-stat: 3 kvstore members,
# each writing its counters to its own file ("%u": the member's id, given
# with --set), paced so that they run for about 15 s. While they run,
# squall-stat shows each member's id and a delivered count that grows
# between two reads, and -w prints the three members side by side; once
# they closed, each file's last delivered count is what the member says
# it applied, and the file says the member closed.
N=3
. "$SRC/tests/vm/group_common.sh"
STAT=$BUILD/tools/squall-stat
[ -x "$STAT" ] || fail "$STAT is not built"
# The files on the VM's own tmpfs: squall-stat compares their times
# with the clock of the machine it runs on.
SD=$(mktemp -d /run/squall-stats.XXXXXX 2>/dev/null || mktemp -d "$OUT/stats.XXXXXX")
cleanup_stats() { rm -rf "$SD"; cleanup; }
trap cleanup_stats EXIT INT TERM

for i in 0 1 2; do
    "$BUILD/examples/kvstore" --config "$CFG" --id "$i" --random 3000 \
        --rate 200 --start-barrier --set "group.stats_file=$SD/kv-%u.stats" \
        >"$OUT/kv.$i.out" 2>"$OUT/kv.$i.err" &
    PID[$i]=$!
done

# stat_read ID: squall-stat on member ID's file, its output kept in
# $OUT/stat.ID.last and its status in RC; stat_field ID KEY: KEY's value
# in that output (one file: the row's last word).
stat_read() {
    RC=0
    "$STAT" "$SD/kv-$1.stats" >"$OUT/stat.$1.last" 2>&1 || RC=$?
}
stat_field() {
    awk -v k="$2" '$1 == k { print $NF; exit }' "$OUT/stat.$1.last"
}

# Each member's file appears once its group is up (the first write is
# part of group_create); read it while the member runs.
declare -A D1
for i in 0 1 2; do
    t=0
    until [ -e "$SD/kv-$i.stats" ]; do
        kill -0 "${PID[$i]}" 2>/dev/null || fail "member $i exited before writing $SD/kv-$i.stats"
        [ "$t" -lt 600 ] || fail "member $i wrote no $SD/kv-$i.stats in 60 s"
        sleep 0.1; t=$((t + 1))
    done
    stat_read "$i"
    m=$(stat_field "$i" member)
    [ "$RC" = 0 ] || fail "squall-stat on member $i's file exited with $RC: $(cat "$OUT/stat.$i.last")"
    [ "$m" = "$i" ] || fail "squall-stat shows member '$m' in member $i's file: $(cat "$OUT/stat.$i.last")"
    D1[$i]=$(stat_field "$i" group.delivered)
    case "${D1[$i]}" in ''|*[!0-9]*) fail "no group.delivered for member $i: $(cat "$OUT/stat.$i.last")" ;; esac
done
echo "ok: squall-stat: members 0, 1, 2 in their own files (delivered ${D1[0]}, ${D1[1]}, ${D1[2]})"

# The count grows between two reads while the members send (the file is
# rewritten every second; 60 s is plenty).
for i in 0 1 2; do
    t=0
    while :; do
        stat_read "$i"
        d=$(stat_field "$i" group.delivered)
        s=$(stat_field "$i" state)
        [ -n "$d" ] && [ "$d" -gt "${D1[$i]}" ] && break
        [ "$s" = running ] || fail "member $i is '$s' before its delivered count grew past ${D1[$i]}: $(cat "$OUT/stat.$i.last")"
        [ "$t" -lt 600 ] || fail "member $i's delivered count stayed at ${D1[$i]} for 60 s"
        sleep 0.1; t=$((t + 1))
    done
    [ "$s" = running ] || fail "member $i: state '$s' while it delivers"
    echo "ok: squall-stat: member $i delivered ${D1[$i]}, then $d (state $s)"
done

# Watch: two prints, the three members side by side.
"$STAT" -w -n 2 "$SD/kv-0.stats" "$SD/kv-1.stats" "$SD/kv-2.stats" >"$OUT/watch.txt" 2>&1 ||
    fail "squall-stat -w exited with $?: $(cat "$OUT/watch.txt")"
[ "$(grep -c 'member 0 *member 1 *member 2' "$OUT/watch.txt")" = 2 ] ||
    fail "squall-stat -w did not print the three members twice: $(cat "$OUT/watch.txt")"
echo "ok: squall-stat -w: group.delivered $(grep '^group.delivered ' "$OUT/watch.txt" | tail -n1 | sed 's/^group.delivered *//')"

for i in 0 1 2; do
    finish "$i" 180
    [ "$RC" = 0 ] || fail "kv: member $i exited with status $RC"
done
# The last write comes from group_close, after the flush: the count the
# member reports.
for i in 0 1 2; do
    grep -q "^KVSTORE member=$i sent=3000 applied=9000 " "$OUT/kv.$i.out" ||
        fail "kvstore: member $i did not apply all 9,000 commands"
    a=$(field kv "$i" applied)
    stat_read "$i"
    d=$(stat_field "$i" group.delivered)
    [ "$RC" = 0 ] || fail "squall-stat on member $i's last file exited with $RC: $(cat "$OUT/stat.$i.last")"
    s=$(stat_field "$i" state)
    [ "$s" = closed ] || fail "member $i's last file says '$s', not closed"
    [ "$d" = "$a" ] || fail "member $i's last file says delivered $d, the member applied $a"
    grep -q 'closed its group' "$OUT/stat.$i.last" || fail "squall-stat does not say member $i closed"
done
echo "ok: last files: members 0, 1, 2 closed; each file's delivered count ($(stat_field 0 group.delivered)) is what its member applied"
echo "PASS"
