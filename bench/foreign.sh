#!/usr/bin/env bash
# squall-bench: vm 3
# squall-bench: kernel trixie-backports/linux-image-amd64
# Ordered sends through the group API from three kinds of memory, member 0
# sending to members 1 and 2 (conf/local-3.cfg), 1 KiB to 64 MiB, in one VM
# run: from a lease (group_ordered_send), from malloc'd memory in place
# (group_send_mem_async, several buffers in flight: no copy from
# group.copy_threshold up, where it is larger than smc.max_payload; below,
# it copies), the same one at a time (group_send_mem, which returns once
# every member has it), and the same memory through the copy path
# (group_send_copy). Each figure is bytes of one sender's stream
# every member has per second (the sender's own delivery of the last
# message ends the clock). The SUMMARY's ratio is in place over lease at
# 16 MiB; copy_threshold_bytes is the setting the run used. MB = 2^20 bytes.
#
# It boots Debian 13's backports kernel (7.x) by default: on Debian 12's
# 6.1, the 64 MiB phase often stops making progress after rxe's
# retransmissions (tens of completer retries, thousands of duplicate
# requests), with no error and no suspicion on any member: only
# heartbeats flow, and every member waits for a delivery (README.md,
# "foreign"). The run prints rxe's retry and duplicate counters either
# way, so a failure shows whether it was that.
# SQUALL_VM_KERNEL= scripts/bench foreign runs it on the host's kernel.
set -euo pipefail
BENCH=$BUILD/bench/foreign_bench
CFG=$SRC/conf/local-3.cfg
SIZES=${FOREIGN_BENCH_SIZES:-1,4,16,64,256,1024,4096,16384,65536}
BUDGET=${FOREIGN_BENCH_BUDGET_MIB:-64}
OUT=$(mktemp -d /tmp/squall-bench-foreign.XXXXXX)
. "$SRC/bench/lib/common.sh"
. "$SRC/bench/lib/csv.sh"
csv_dir foreign
echo "# logs: $OUT"
fail() { echo "bench/foreign: $*" >&2; }

# The device's retry and duplicate counters (Soft-RoCE's hw_counters),
# before and after: what the link cost besides the bytes.
HWC=/sys/class/infiniband/rxe0/ports/1/hw_counters
COUNTERS="completer_retry_err duplicate_request rcvd_seq_err rcvd_rnr_err"
counters() { local c; for c in $COUNTERS; do cat "$HWC/$c" 2>/dev/null || echo 0; done; }
read -ra before <<<"$(counters | tr '\n' ' ')"
link_costs() {
    local c i=0 after
    read -ra after <<<"$(counters | tr '\n' ' ')"
    printf "# kernel %s, rxe0 during the run:" "$(uname -r)"
    for c in $COUNTERS; do
        printf " %s=%s" "$c" $((after[i] - before[i]))
        i=$((i + 1))
    done
    echo
}

ARGS="--sizes $SIZES --budget-mib $BUDGET"
echo "# $BENCH $CFG ID $ARGS"
for i in 1 2; do
    "$BENCH" "$CFG" "$i" $ARGS >"$OUT/f.$i" 2>&1 &
    pids+=($!)
done
ok=0
# Under the VM's own limit (SQUALL_VM_TIMEOUT, 1800 s with its boot), so
# that a run that stops making progress still prints its logs and counters.
LIMIT=${FOREIGN_BENCH_TIMEOUT_S:-1500}
why=
timeout "$LIMIT" "$BENCH" "$CFG" 0 $ARGS >"$OUT/f.0" 2>&1 || ok=$?
[ $ok != 124 ] || why="member 0 did not finish within $LIMIT s (FOREIGN_BENCH_TIMEOUT_S); "
if [ $ok != 0 ]; then
    # The receivers end by themselves once member 0 is gone, saying why;
    # what is left of them after 20 s is killed.
    sleep 20
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
fi
for p in "${pids[@]}"; do wait "$p" || ok=1; done
pids=()
if [ $ok != 0 ]; then
    cat "$OUT"/f.*
    link_costs
    fail "foreign_bench failed: ${why}logs above; duplicate requests in the thousands are the 6.1 rxe stall the header describes; no SUMMARY"
    exit 1
fi
# get MODE SIZE FIELD: a field of member 0's RESULT line.
get() {
    awk -v m="$1" -v s="$2" -v f="$3" '$1 == "RESULT" {
        split("", kv); for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
        if (kv["mode"] == m && kv["size"] == s) print kv[f] }' "$OUT/f.0"
}
thr=$(sed -n 's/^CONFIG copy_threshold=\([0-9]*\).*/\1/p' "$OUT/f.0")
smcmax=$(sed -n 's/^CONFIG .*smc_max_payload=\([0-9]*\).*/\1/p' "$OUT/f.0")
echo
echo "Ordered sends, 1 sender, 3 members, same VM run (MB = 2^20 bytes; group.copy_threshold = $thr, smc.max_payload = $smcmax)"
printf "%10s %12s %14s %15s %12s %10s %10s\n" size_bytes lease_MBps in_place_MBps in_place_wait_MBps copy_MBps in_place_path ratio_ip
csv_header foreign size_bytes lease_MBps in_place_MBps in_place_wait_MBps copy_MBps in_place_path ratio_in_place_vs_lease
for k in ${SIZES//,/ }; do
    s=$((k * 1024))
    l=$(get lease $s MBps) p=$(get in_place $s MBps) w=$(get in_place_wait $s MBps) c=$(get copy $s MBps)
    n=$(get in_place $s in_place)
    [ -n "$l" ] && [ -n "$p" ] && [ -n "$w" ] && [ -n "$c" ] || { fail "size $s: missing a figure: no SUMMARY"; exit 1; }
    path=copy
    [ "${n:-0}" -gt 0 ] && path=in_place
    r=$(awk -v a="$p" -v b="$l" 'BEGIN { printf "%.3f", a / b }')
    printf "%10s %12s %14s %15s %12s %10s %10s\n" "$s" "$l" "$p" "$w" "$c" "$path" "$r"
    csv_row foreign "$s" "$l" "$p" "$w" "$c" "$path" "$r"
done
link_costs
s16=$((16384 * 1024))
L=$(get lease $s16 MBps) P=$(get in_place $s16 MBps) W=$(get in_place_wait $s16 MBps) C=$(get copy $s16 MBps)
[ -n "$L" ] && [ -n "$P" ] && [ -n "$W" ] && [ -n "$C" ] || { fail "no 16 MiB figures (FOREIGN_BENCH_SIZES must hold 16384): no SUMMARY"; exit 1; }
awk -v l="$L" -v p="$P" -v w="$W" -v c="$C" -v t="$thr" 'BEGIN {
    printf "SUMMARY foreign lease_MBps_16m=%.2f in_place_MBps_16m=%.2f copy_MBps_16m=%.2f ratio_in_place_vs_lease=%.3f in_place_wait_MBps_16m=%.2f copy_threshold_bytes=%s\n", l, p, c, p / l, w, t }'
