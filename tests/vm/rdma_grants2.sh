# Per-peer keys (rdma_sq_options.peer_windows): member 2 starts its
# exchange of grants 1.5 s after connecting, member 1 at once. Member 1's
# GRANT must find its receive posted at member 2 all the same: the device
# sends no "receiver not ready" NAK (a NAK sent before the connection's
# short RNR timer is set makes the sender wait 655 ms, which every view
# change paid once), and both members end with the other's key.
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 2 7580)
dev=$(ls /sys/class/infiniband | head -n1)
hwc=/sys/class/infiniband/$dev/ports/1/hw_counters
[ -r "$hwc/send_rnr_err" ] || fail "no $hwc/send_rnr_err on this device"
rnr0=$(cat "$hwc/send_rnr_err")
start 2 $M --grants 1500 --connect-timeout-ms 30000
start 1 $M --grants 0 --connect-timeout-ms 30000
finish_ok 1 120
finish_ok 2 120
for i in 1 2; do
    expect "$OUT/$i.out" "member $i: grants exchanged with 1 peers in [0-9]+ ms" "member $i's grants"
    expect "$OUT/$i.out" "member $i OK" "member $i's end"
done
rnr=$(( $(cat "$hwc/send_rnr_err") - rnr0 ))
for i in 1 2; do show "$i"; done
[ "$rnr" = 0 ] || fail "$dev sent $rnr receiver-not-ready NAKs during the exchange"
echo "PASS: grants exchanged 1.5 s apart with no receiver-not-ready NAK ($(grep -ho 'in [0-9]* ms' "$OUT/1.out") at member 1)"
