# examples/kvstore: 3 members stream random puts and deletes; a 4th
# (members[3].joins = true in conf/local-join4.cfg) starts mid-stream with
# --join, receives the table through the state-transfer upcalls before it
# applies anything, sends commands of its own, and every member ends with
# the same table (state hash). The first 3 meet at a barrier before they
# start (--start-barrier): the joiner comes after it, and its own barrier
# at the end must wait for theirs. Every member's last command has the
# same position in the order (last_seq), the joiner's too. The group has
# a key (group.key_file, made by squall-keygen): the join proves it, and
# so does every connection in the view the joiner enters. Before that,
# joiners that are refused, each saying why: one with another group file,
# one without the key, one with another key.
N=4
. "$SRC/tests/vm/group_common.sh"
"$BUILD/tools/squall-keygen" "$OUT/group.key" >/dev/null || fail "squall-keygen failed"
"$BUILD/tools/squall-keygen" "$OUT/other.key" >/dev/null || fail "squall-keygen failed"
PLAIN=$SRC/conf/local-join4.cfg
with_key() { # FILE KEY
    sed "s|^\( *connect_timeout_ms *=.*\)$|\1\n  key_file = \"$2\";|" "$PLAIN" >"$1"
    grep -q "key_file = \"$2\"" "$1" || fail "could not add key_file to $1"
}
with_key "$OUT/join4.cfg" group.key
with_key "$OUT/other4.cfg" other.key
CFG=$OUT/join4.cfg

KV=$BUILD/examples/kvstore
for i in 0 1 2; do
    "$KV" --config "$CFG" --id "$i" --random 3000 --rate 150 --start-barrier \
        >"$OUT/kv.$i.out" 2>"$OUT/kv.$i.err" &
    PID[$i]=$!
done
deadline=$(( $(date +%s) + 180 ))
until [ "$(cat "$OUT"/kv.[012].out 2>/dev/null | grep -c '^VIEW .*epoch=0 ')" = 3 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "join: the first 3 members did not start within 180 s"
    sleep 0.2
done
# A refused join: another group file (a setting every member must share
# differs); the refusal says why.
if "$KV" --config "$CFG" --id 3 --join --set smc.window=512 --random 1 \
    >"$OUT/bad.out" 2>"$OUT/bad.err"; then
    fail "join: a member with another group file was let in"
fi
grep -q "refused member 3's join: member 3's group file differs from member [0-2]'s (fingerprint" "$OUT/bad.err" ||
    fail "join: the refusal does not say the group files differ: $(cat "$OUT/bad.err")"
echo "ok: a joiner with another group file is refused, with both fingerprints"
if "$KV" --config "$PLAIN" --id 3 --join --random 1 >"$OUT/nokey.out" 2>"$OUT/nokey.err"; then
    fail "join: a joiner without the group key was let in"
fi
grep -q "refused member 3's join: member [0-2] requires the group key (group.key_file), and member 3's join request carries no proof of it" "$OUT/nokey.err" ||
    fail "join: the refusal does not say the key is missing: $(cat "$OUT/nokey.err")"
echo "ok: a joiner without the group key is refused: $(grep -o 'member [0-2] refused.*' "$OUT/nokey.err" | head -n1)"
if "$KV" --config "$OUT/other4.cfg" --id 3 --join --random 1 >"$OUT/otherkey.out" 2>"$OUT/otherkey.err"; then
    fail "join: a joiner with another key was let in"
fi
grep -q "member [0-2]'s proof of the group key is wrong: it holds another key than $OUT/other.key" "$OUT/otherkey.err" ||
    fail "join: the refusal does not say the keys differ: $(cat "$OUT/otherkey.err")"
echo "ok: a joiner with another key is refused: $(grep -o "member [0-2]'s proof.*" "$OUT/otherkey.err" | head -n1)"
sleep 1
"$KV" --config "$CFG" --id 3 --join --random 500 --rate 300 \
    >"$OUT/kv.3.out" 2>"$OUT/kv.3.err" &
PID[3]=$!
for i in 0 1 2 3; do
    finish "$i" 600
    [ "$RC" = 0 ] || fail "join: member $i exited with status $RC"
done
grep -q "^STATE loaded " "$OUT/kv.3.out" || fail "join: member 3 loaded no state"
grep -q "^VIEW member=3 epoch=[1-9][0-9]* members=0,1,2,3$" "$OUT/kv.3.out" ||
    fail "join: member 3 did not enter a view with members 0,1,2,3"
s0=$(field kv 0 state_hash)
for i in 0 1 2 3; do
    grep -q "^VIEW member=$i epoch=[1-9][0-9]* members=0,1,2,3$" "$OUT/kv.$i.out" ||
        fail "join: member $i never installed the view with member 3"
    [ "$(field kv "$i" state_hash)" = "$s0" ] ||
        fail "join: member $i's table differs ($(field kv "$i" state_hash), member 0: $s0)"
done
for i in 0 1 2; do
    grep -q "^KVSTORE member=$i sent=3000 applied=9500 " "$OUT/kv.$i.out" ||
        fail "join: member $i did not apply all 9,500 commands"
done
q0=$(field kv 0 last_seq)
for i in 1 2 3; do
    [ "$(field kv "$i" last_seq)" = "$q0" ] ||
        fail "join: member $i's last command is at position $(field kv "$i" last_seq), member 0's at $q0"
done
echo "ok: join: every member's last command is at position $q0 (the joiner numbers positions as the others)"
[ "$(field kv 0 order_hash)" = "$(field kv 1 order_hash)" ] && [ "$(field kv 0 order_hash)" = "$(field kv 2 order_hash)" ] ||
    fail "join: members 0, 1, 2 applied different orders"
for i in 0 1 2; do
    grep -q "names no group.key_file" "$OUT/kv.$i.err" &&
        fail "join: member $i, which has the key, warned that it has none"
done
echo "ok: kvstore join: member 3 joined mid-stream ($(sed -n 's/^STATE loaded keys=\([0-9]*\).*/\1/p' "$OUT/kv.3.out") keys transferred), applied $(field kv 3 applied) commands after it; all 4 end with state hash $s0"
echo "PASS"
