# examples/kvstore with 3 members and 10,002 random puts and deletes
# (3,334 from each member): every member applies the same commands in the
# same order and ends with the same table.
N=3
. "$SRC/tests/vm/group_common.sh"

run_members kv 900 "$BUILD/examples/kvstore" --random 3334
s0=$(field kv 0 state_hash)
o0=$(field kv 0 order_hash)
for i in 0 1 2; do
    grep -q "^KVSTORE member=$i sent=3334 applied=10002 " "$OUT/kv.$i.out" ||
        fail "kvstore: member $i did not apply all 10,002 commands"
    [ "$(field kv "$i" state_hash)" = "$s0" ] || fail "kvstore: member $i's table differs"
    [ "$(field kv "$i" order_hash)" = "$o0" ] || fail "kvstore: member $i applied another order"
done
echo "ok: kvstore: 3 members applied 10,002 commands in one order; state hash $s0 everywhere"
echo "PASS"
