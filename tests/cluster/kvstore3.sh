# examples/kvstore across 3 VMs, one member in each, KV_OPS random puts and
# deletes from every member: every member applies the same commands in the
# same order and ends with the same table.
N=3
KV_OPS=${KV_OPS:-1000}
. "$SRC/tests/cluster/lib.sh"

start_cluster 900 kv -- "$BUILD/examples/kvstore" --config "$CFG" --random "$KV_OPS"
t0=$(now_ms)
go kv
exited kv "0 1 2" 600 0
total=$((3 * KV_OPS))
s0=$(val "$OUT/kv.0.out" KVSTORE state_hash)
o0=$(val "$OUT/kv.0.out" KVSTORE order_hash)
for i in 0 1 2; do
    grep -q "^KVSTORE member=$i sent=$KV_OPS applied=$total " "$OUT/kv.$i.out" ||
        fail "kvstore: member $i did not apply all $total commands"
    [ "$(val "$OUT/kv.$i.out" KVSTORE state_hash)" = "$s0" ] || fail "kvstore: member $i's table differs"
    [ "$(val "$OUT/kv.$i.out" KVSTORE order_hash)" = "$o0" ] || fail "kvstore: member $i applied another order"
done
echo "ok: kvstore: 3 VMs applied $total commands in one order in $(( $(now_ms) - t0 )) ms; state hash $s0 everywhere"
end_cluster 120
[ "$CLUSTER_RC" = 0 ] || fail "the cluster exited with status $CLUSTER_RC"
echo "PASS"
