# The group API with 3 members (see group_common.sh):
#  - point-to-point request/reply between every pair;
#  - group_close loses nothing: every member sends 300 messages and closes
#    at once; close returns only when every member delivered all 900;
#  - a deliver upcall may hand its delivery to another thread, which
#    releases it before the upcall returns true; that thread's sends of a
#    large delivery itself (group_p2p_send, group_ordered_send) are
#    refused with -EINVAL: a delivery is no lease to send;
#  - a member killed with kill -9 while all stream: the other two (a
#    majority of 3) are told through the failure upcall, naming it, go on
#    in a view without it and deliver every message of each other's, in
#    one order (the view-change tests, view_*4.sh, check much more);
#  - bad starts fail with an error that says what is wrong: a broken .cfg
#    (file, line, setting), an unknown member id (the known ids), and a
#    member whose group file disagrees with its peers' (on every member).
N=3
. "$SRC/tests/vm/group_common.sh"

run_members p2p 600 "$GM" --p2p
for i in 0 1 2; do
    grep -q "^P2P member=$i requests=2 replies=2 bad=0$" "$OUT/p2p.$i.out" ||
        fail "p2p: member $i did not answer and get answered by both others"
done
echo "ok: p2p: every member answered both others' requests and got both replies"

run_members close 600 "$GM" --count 300
check_order close

# Every delivery handed by its upcall to another thread, which checks and
# releases it before the upcall returns true: each release is accepted
# (an error counts as bad) and the group gives the memory back.
run_members handoff 600 "$GM" --count 300 --sizes 64,2000,20000 --handoff \
    --forward-check
check_order handoff
for i in 0 1 2; do
    [ "$(field handoff "$i" forwards_refused)" -gt 0 ] ||
        fail "handoff: member $i tried no send of a large delivery"
done
echo "ok: handoff: sends of a delivery were refused ($(field handoff 0 forwards_refused), $(field handoff 1 forwards_refused) and $(field handoff 2 forwards_refused) large deliveries)"

# kill -9 of member 2 once every member streams.
for i in 0 1 2; do
    "$GM" --config "$CFG" --id "$i" --count 3000 --sizes 64,2000,20000 \
        >"$OUT/kill.$i.out" 2>"$OUT/kill.$i.err" &
    PID[$i]=$!
done
t=0
until [ "$(cat "$OUT"/kill.*.out 2>/dev/null | grep -c '^READY')" = 3 ]; do
    [ "$t" -lt 1200 ] || fail "kill: the members did not all start within 120 s"
    sleep 0.1
    t=$((t + 1))
done
sleep 1
kill -9 "${PID[2]}"
finish 2 30
for i in 0 1; do
    # Exit status 1: member 2's messages after its death never came.
    finish "$i" 300
    [ "$RC" = 0 ] || [ "$RC" = 1 ] || fail "kill: member $i ended with status $RC"
    grep -q "failure upcall: member 2:" "$OUT/kill.$i.err" ||
        fail "kill: member $i was not told of member 2: $(cat "$OUT/kill.$i.err")"
    grep -q "^ORDER member=$i " "$OUT/kill.$i.out" || fail "kill: member $i printed no result"
    [ "$(field kill "$i" bad)" = 0 ] || fail "kill: member $i saw damaged, lost or repeated messages"
    [ "$(field kill "$i" delivered)" -ge 6000 ] ||
        fail "kill: member $i delivered $(field kill "$i" delivered), fewer than the 6000 of the live senders"
done
[ "$(field kill 0 hash)" = "$(field kill 1 hash)" ] && [ "$(field kill 0 delivered)" = "$(field kill 1 delivered)" ] ||
    fail "kill: members 0 and 1 delivered different sequences"
echo "ok: kill -9 of member 2: members 0 and 1 went on in a new view and delivered the same $(field kill 0 delivered) messages (all 6000 of theirs) in one order"

# A broken .cfg: the error names the file, the line and the setting.
bad=$OUT/broken.cfg
sed 's/^\( *window *= *\).*/\1"many";/' "$CFG" >"$bad"
rc=0
"$GM" --config "$bad" --id 0 >"$OUT/badcfg.out" 2>"$OUT/badcfg.err" || rc=$?
[ "$rc" != 0 ] || fail "a broken .cfg was accepted"
grep -q "broken.cfg:[0-9]*:.*smc.window" "$OUT/badcfg.err" ||
    fail "the broken .cfg error does not name the file, line and setting: $(cat "$OUT/badcfg.err")"
echo "ok: broken .cfg: $(cat "$OUT/badcfg.err")"

# An unknown member id.
rc=0
"$GM" --config "$CFG" --id 7 >"$OUT/badid.out" 2>"$OUT/badid.err" || rc=$?
[ "$rc" != 0 ] || fail "an unknown member id was accepted"
grep -q "7" "$OUT/badid.err" && grep -q "0, 1, 2\|0 1 2\|0,1,2" "$OUT/badid.err" ||
    fail "the unknown-id error does not name the id and the members: $(cat "$OUT/badid.err")"
echo "ok: unknown id: $(cat "$OUT/badid.err")"

# Member 2 loads a group file with another SMC window: every member refuses.
other=$OUT/other.cfg
sed 's/^\( *window *= *\).*/\1128;/' "$CFG" >"$other"
for i in 0 1 2; do
    c=$CFG
    [ "$i" = 2 ] && c=$other
    "$GM" --config "$c" --id "$i" --count 10 >"$OUT/differ.$i.out" 2>"$OUT/differ.$i.err" &
    PID[$i]=$!
done
for i in 0 1 2; do
    finish "$i" 300
    [ "$RC" != 0 ] && [ "$RC" != 124 ] || fail "differ: member $i did not refuse (status $RC)"
    grep -q "group file differs" "$OUT/differ.$i.err" ||
        fail "differ: member $i's error does not say the group files differ: $(cat "$OUT/differ.$i.err")"
done
echo "ok: disagreeing group files: $(head -n1 "$OUT/differ.0.err")"
echo "PASS"
