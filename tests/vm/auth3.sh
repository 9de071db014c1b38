# Authenticated members, 3 of them (group.key_file; rdma/auth.h):
#  - with a key made by squall-keygen, the group runs as without one;
#  - members 1 and 2 wait for member 0. A process that has the group file
#    and claims to be member 0 connects, first with another key, then with
#    no key_file: both times 1 and 2 refuse it without stopping (and count
#    it, and say whom they refused and why through the log upcall), and
#    the impostor fails with an error naming who refused it and why. Then the real member 0 starts, and the three deliver as one;
#  - a key file others may read is refused before anything connects.
N=3
. "$SRC/tests/vm/group_common.sh"

KEYGEN=$BUILD/tools/squall-keygen
"$KEYGEN" "$OUT/group.key" >/dev/null || fail "squall-keygen failed"
"$KEYGEN" "$OUT/other.key" >/dev/null || fail "squall-keygen failed"
plain=$SRC/conf/local-3.cfg
# key_file is relative to the group file's directory.
keyed() { # FILE KEY: the group file with key_file = KEY
    sed "s|^\( *connect_timeout_ms *=.*\)$|\1\n  key_file = \"$2\";|" "$plain" >"$1"
    grep -q "key_file = \"$2\"" "$1" || fail "could not add key_file to $1"
}
keyed "$OUT/keyed.cfg" group.key
keyed "$OUT/wrong.cfg" other.key
CFG=$OUT/keyed.cfg

run_members keyed 600 "$GM" --count 300
check_order keyed
grep -q "names no group.key_file" "$OUT"/keyed.*.err &&
    fail "keyed: a member with a key warned that it has none"

# Members 1 and 2 up, waiting for member 0.
for i in 1 2; do
    "$GM" --config "$CFG" --id "$i" --count 300 \
        >"$OUT/real.$i.out" 2>"$OUT/real.$i.err" &
    PID[$i]=$!
done
sleep 2
# impostor NAME CFG WHAT PATTERN: a process claiming to be member 0 with
# CFG is refused, and its error matches PATTERN (who refused it and why).
impostor() {
    local rc=0
    "$GM" --config "$2" --id 0 --count 300 >"$OUT/$1.out" 2>"$OUT/$1.err" || rc=$?
    [ "$rc" != 0 ] || fail "$1: the impostor with $3 was let in"
    grep -Eq "$4" "$OUT/$1.err" ||
        fail "$1: the impostor's error does not say who refused it and why: $(cat "$OUT/$1.err")"
    echo "ok: $1: the impostor with $3 was refused: $(grep -Eo "$4.*" "$OUT/$1.err" | head -n1)"
}
impostor wrongkey "$OUT/wrong.cfg" "another key" \
    "member 0: member [12] \(10.77.0.[23]:7400\) closed the connection during the key exchange: it did not accept this member's proof of the group key"
impostor nokey "$plain" "no key" \
    "member [12] \(10.77.0.[23]:7400\) authenticates with a group key, and this member has none"
grep -q "names no group.key_file: members are not authenticated" "$OUT/nokey.err" ||
    fail "nokey: the member without a key did not warn"
for i in 1 2; do
    kill -0 "${PID[$i]}" 2>/dev/null || fail "member $i stopped because of an impostor"
done
# The real member 0.
"$GM" --config "$CFG" --id 0 --count 300 >"$OUT/real.0.out" 2>"$OUT/real.0.err" &
PID[0]=$!
for i in 0 1 2; do
    finish "$i" 600
    [ "$RC" = 0 ] || fail "real: member $i exited with status $RC"
done
check_order real
for i in 1 2; do
    [ "$(field real "$i" refused)" = 2 ] ||
        fail "real: member $i counted $(field real "$i" refused) refused connections, not 2"
done
echo "ok: real: members 1 and 2 refused both impostors (group_stats refused=2) and went on with the real member 0"
# The refusing side says whom it refused and why, through the log upcall.
for i in 1 2; do
    refusals=$(grep "^member $i: log: member $i refused a connection claiming to be member 0 (10.77.0.1:7400): " "$OUT/real.$i.err" || true)
    [ "$(printf '%s\n' "$refusals" | grep -c .)" -ge 2 ] ||
        fail "real: member $i's log upcall did not report both refusals: $(cat "$OUT/real.$i.err")"
    printf '%s\n' "$refusals" | grep -q "does not authenticate" ||
        fail "real: member $i's log does not say the impostor without a key does not authenticate: $refusals"
done
echo "ok: real: the log upcall of member 1 said: $(grep -m2 "^member 1: log: " "$OUT/real.1.err" | tr '\n' '|')"

# A key file its group or others may read is refused before anything.
chmod 644 "$OUT/group.key"
rc=0
"$GM" --config "$CFG" --id 0 --count 10 >"$OUT/mode.out" 2>"$OUT/mode.err" || rc=$?
[ "$rc" != 0 ] || fail "mode: a key file others may read was accepted"
grep -q "group.key_file: key file $OUT/group.key: its group or others may read or write it (mode 0644)" "$OUT/mode.err" ||
    fail "mode: the error does not name the file and its mode: $(cat "$OUT/mode.err")"
echo "ok: mode: $(grep -o 'key file .*' "$OUT/mode.err" | head -n1)"
echo "PASS: 3 authenticated members; impostors with another key or none refused, naming who and why; an exposed key file refused"
