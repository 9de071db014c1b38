#!/usr/bin/env bash
# squall-bench: vm 4
# RDMC (binomial pipeline, blocks of the .cfg's rdmc.block_size) from member
# 0 to 1, 2 and 3 receivers, for 1, 16 and 64 MiB messages: time per message
# and aggregate delivered bandwidth (bytes delivered to all receivers per
# second). References in the same VM run:
#   - the link: ib_write_bw on the same device at 1 MiB with -t 16, the
#     better of 1 and 3 queue pairs;
#   - Open MPI's MPI_Bcast with the same member counts and sizes over TCP on
#     veth0, judged against its own link: one iperf3 TCP stream between two
#     member addresses.
# MB = 2^20 bytes everywhere.
set -euo pipefail
BENCH=$BUILD/bench/rdmc_bench
MPIB=$BUILD/bench/mpi_bcast
CFG=$SRC/conf/local-4.cfg
DEV=${SQUALL_BENCH_DEVICE:-rxe0}
A1=10.77.0.1
A2=10.77.0.2
SIZES=${RDMC_BENCH_SIZES:-1,16,64}
# MiB sent per point (reps = budget / size, 2..50), for RDMC and MPI alike.
BUDGET=${RDMC_BENCH_BUDGET_MIB:-64}
OUT=$(mktemp -d /tmp/squall-bench-rdmc.XXXXXX)
. "$SRC/bench/lib/common.sh"
[ -x "$MPIB" ] || { echo "bench/rdmc: $MPIB not built (install libopenmpi-dev)" >&2; exit 1; }

# ---- RDMC ----
RARGS="--sizes $SIZES --receivers 1,2,3 --budget-mib $BUDGET"
echo "# rdmc: $BENCH $CFG ID $RARGS"
for i in 1 2 3; do
    "$BENCH" "$CFG" "$i" $RARGS >"$OUT/rdmc.$i" 2>&1 &
    pids+=($!)
done
timeout 1500 "$BENCH" "$CFG" 0 $RARGS >"$OUT/rdmc.0" 2>&1 ||
    { cat "$OUT"/rdmc.*; exit 1; }
for p in "${pids[@]}"; do wait "$p" || { cat "$OUT"/rdmc.*; exit 1; }; done
pids=()
cat "$OUT/rdmc.0"

# ---- the link: ib_write_bw ----
X1=$(gid_index $A1)
X2=$(gid_index $A2)
best_link=0
port=18600
for q in 1 3; do
    cmd_s="ib_write_bw -d $DEV -i 1 -x $X2 -p $port -s 1048576 -t 16 -q $q -n 200"
    cmd_c="ib_write_bw -d $DEV -i 1 -x $X1 -p $port -s 1048576 -t 16 -q $q -n 200 $A2"
    echo "# server: $cmd_s"
    echo "# client: $cmd_c"
    timeout 300 $cmd_s >"$OUT/ibs.$q" 2>&1 &
    pids+=($!)
    sleep 1
    tries=0
    until timeout 300 $cmd_c >"$OUT/ibc.$q" 2>&1; do
        tries=$((tries + 1))
        [ $tries -ge 10 ] && { cat "$OUT/ibc.$q" "$OUT/ibs.$q"; exit 1; }
        sleep 1
    done
    wait "${pids[-1]}" || true
    cat "$OUT/ibc.$q"
    # columns: #bytes #iterations BW_peak BW_average MsgRate; perftest's MB
    # is 2^20 bytes when BW_average = MsgRate * bytes / 2^20, else 10^6.
    fig=$(awk '$1 == 1048576 && NF >= 5 {print $4, $5}' "$OUT/ibc.$q")
    avg=${fig% *}
    rate=${fig#* }
    bw=$(awk -v a="$avg" -v r="$rate" 'BEGIN { u = r * 1e6 * 1048576 / a;
        printf "%.2f", (u > 1024000) ? a : a * 1e6 / 1048576 }')
    echo "ib_write_bw -q $q: $bw MB/s"
    best_link=$(awk -v a="$best_link" -v b="$bw" 'BEGIN { print (b > a) ? b : a }')
    port=$((port + 1))
done

# ---- the TCP link: one iperf3 stream ----
echo "# iperf3 -s -B $A2 -1; iperf3 -c $A2 -B $A1 -t 5 -f m"
iperf3 -s -B $A2 -1 >"$OUT/iperf.s" 2>&1 &
pids+=($!)
tries=0
until sleep 1 && iperf3 -c $A2 -B $A1 -t 5 -f m >"$OUT/iperf.c" 2>&1; do
    tries=$((tries + 1))  # the server may take a while to listen in the VM
    [ $tries -ge 20 ] && { cat "$OUT/iperf.c" "$OUT/iperf.s"; exit 1; }
done
wait "${pids[-1]}" || true
cat "$OUT/iperf.c"
tcp_mbit=$(awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { print v }' "$OUT/iperf.c")
tcp_link=$(awk -v m="$tcp_mbit" 'BEGIN { printf "%.2f", m * 1e6 / 8 / 1048576 }')

# ---- Open MPI's MPI_Bcast ----
: >"$OUT/mpi"
for np in 2 3 4; do
    cmd="mpirun --allow-run-as-root --oversubscribe -np $np --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include veth0 $MPIB --sizes $SIZES --budget-mib $BUDGET"
    echo "# $cmd"
    timeout 900 $cmd >"$OUT/mpi.$np" 2>&1 || { cat "$OUT/mpi.$np"; exit 1; }
    grep '^RESULT' "$OUT/mpi.$np" | tee -a "$OUT/mpi"
done

# ---- the table ----
get() { # FILE RECEIVERS SIZE FIELD
    awk -v r="$2" -v s="$3" -v f="$4" '$1 == "RESULT" {
        split("", kv); for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
        if (kv["receivers"] == r && kv["size_mib"] == s) print kv[f] }' "$1"
}
echo
echo "RDMC vs MPI_Bcast, same VM run (MB = 2^20 bytes; aggregate = bytes delivered to all receivers per second)"
echo "link: ib_write_bw best of -q 1/-q 3 = $best_link MB/s; TCP: iperf3 one stream = $tcp_link MB/s"
printf "%9s %9s %14s %16s %14s %16s\n" receivers size_MiB rdmc_ms/msg rdmc_agg_MBps mpi_ms/msg mpi_agg_MBps
for r in 1 2 3; do
    for s in ${SIZES//,/ }; do
        printf "%9s %9s %14s %16s %14s %16s\n" "$r" "$s" \
            "$(get "$OUT/rdmc.0" $r $s ms_per_msg)" "$(get "$OUT/rdmc.0" $r $s aggregate_MBps)" \
            "$(get "$OUT/mpi" $r $s ms_per_msg)" "$(get "$OUT/mpi" $r $s aggregate_MBps)"
    done
done
big=${SIZES##*,}
A=$(get "$OUT/rdmc.0" 3 "$big" aggregate_MBps)
C=$(get "$OUT/mpi" 3 "$big" aggregate_MBps)
awk -v a="$A" -v b="$best_link" -v c="$C" -v t="$tcp_link" -v s="$big" 'BEGIN {
    rl = a / b; rm = (a / b) / (c / t);
    printf "SUMMARY rdmc size_mib=%s receivers=3 aggregate_MBps=%.2f link_MBps=%.2f ratio_link=%.3f mpi_bcast_MBps=%.2f tcp_link_MBps=%.2f ratio_vs_mpi=%.3f\n", s, a, b, rl, c, t, rm }'
