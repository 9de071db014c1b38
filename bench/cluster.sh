#!/usr/bin/env bash
# bench/cluster.sh: a Soft-RoCE cluster on this machine, one VM per member
# (scripts/softroce-cluster; needs root). It boots its own VMs, so it has
# no "squall-bench: vm" line.
#  1. 2 VMs: ib_write_lat (64 B) and ib_write_bw (1 MiB, 16 in flight)
#     from one VM's rxe device to the other's, over the bridge; then the
#     same between two addresses of one rxe device inside one VM
#     (scripts/softroce-vm), the set-up every other benchmark uses.
#  2. 3 VMs, view_member streaming as fast as the group takes it (every
#     member sends): 1000-byte messages (SMC) and 200000-byte ones (RDMC)
#     for STREAM_S s each on clean links, then the same with netem "loss
#     1%" on both directions of member 1's link; throughput delivered at
#     member 0, and every run checked as the cluster tests check it (one
#     order, nothing lost, no view change: tests/cluster/lib.sh).
#  3. the same 3 VMs: member 2's link cut while all stream; the time from
#     the cut to the last survivor's new view (the group's
#     sst.suspect_timeout_ms, conf/cluster-3.cfg, is most of it).
# Boot time: from qemu's start to the VM's set-up done, per VM, the mean
# over the 5 VMs booted here.
# Ends with: SUMMARY cluster members=3 boot_s=.. lat_us=.. bw_MBps=..
#   lat_vm_us=.. bw_vm_MBps=.. cut_to_view_ms=.. smc_loss_ratio=..
#   rdmc_loss_ratio=..
set -euo pipefail
STREAM_S=${STREAM_S:-10}
RATE=${RATE:-20000}
IMPAIR=${IMPAIR:-loss 1%}
N=3
. "$SRC/tests/cluster/lib.sh"
. "$SRC/bench/lib/csv.sh"
csv_dir cluster

# --- 1. perftest: across two VMs, and inside one -----------------------------
ctl2=$OUT/ctl2
"$CLUSTER" -n 2 -t 900 -c "$ctl2" -- bash "$SRC/bench/lib/cluster_perf.sh" "$OUT/perf.cluster" \
    >"$OUT/perf.cluster.log" 2>&1 || { cat "$OUT/perf.cluster.log"; fail "perftest across two VMs failed"; }
grep -E "^\[0\] +(#bytes|64|1048576) " "$OUT/perf.cluster.log" || true
"$SRC/scripts/softroce-vm" -n 2 -t 900 -- bash "$SRC/bench/lib/cluster_perf.sh" "$OUT/perf.vm" \
    >"$OUT/perf.vm.log" 2>&1 || { cat "$OUT/perf.vm.log"; fail "perftest inside one VM failed"; }
fig() { sed -n "s/^$2=//p" "$1"; }
lat=$(fig "$OUT/perf.cluster" lat_us) bw=$(fig "$OUT/perf.cluster" bw_MBps)
lat_vm=$(fig "$OUT/perf.vm" lat_us) bw_vm=$(fig "$OUT/perf.vm" bw_MBps)
boots=$(cat "$ctl2/boot_ms")

# --- 2 and 3. the group on 3 VMs --------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }

view_args
VIEW_ARGS=(bash "$SRC/bench/lib/cluster_member.sh" @RUN@ "${VIEW_ARGS[@]}")
start_cluster 1800 smc_clean rdmc_clean smc_lossy rdmc_lossy cut -- "${VIEW_ARGS[@]}"
boots="$boots $(cat "$CTL/boot_ms")"
declare -A MSGS MBPS SIZE
SIZE=([smc]=1000 [rdmc]=200000)
for run in smc_clean rdmc_clean; do
    stream "$run" "${SIZE[${run%_*}]}"
    MSGS[$run]=$THRU_MSGS MBPS[$run]=$THRU_MBPS
done
fault netem 1 $IMPAIR
for run in smc_lossy rdmc_lossy; do
    stream "$run" "${SIZE[${run%_*}]}"
    MSGS[$run]=$THRU_MSGS MBPS[$run]=$THRU_MBPS
done
fault netem 1 clear
go cut
ready cut 180
sleep 3
fault cut 2
wait_views cut "0 1" 1 120
sleep 2
stop_streaming cut
exited cut "0 1" 300 0
exited cut 2 300 3
check_survivors cut "0 1" 2 0,1 "$FAULT_MS"
cut_ms=$VIEW_MS
end_cluster 120

boot_s=$(echo "$boots" | awk '{ for (i = 1; i <= NF; i++) s += $i; printf "%.1f", s / NF / 1000 }')
smc_ratio=$(ratio "${MSGS[smc_lossy]}" "${MSGS[smc_clean]}")
rdmc_ratio=$(ratio "${MSGS[rdmc_lossy]}" "${MSGS[rdmc_clean]}")

echo
echo "# link: RDMA writes between two VMs over the bridge vs two addresses of one rxe device in one VM"
printf '%-22s %12s %12s\n' figure two_VMs one_VM
printf '%-22s %12s %12s\n' "ib_write_lat_64B_us" "$lat" "$lat_vm" "ib_write_bw_1MiB_MBps" "$bw" "$bw_vm"
csv_header link figure two_vms one_vm
csv_row link ib_write_lat_64B_us "$lat" "$lat_vm"
csv_row link ib_write_bw_1MiB_MBps "$bw" "$bw_vm"
echo
echo "# group, 3 VMs, every member sending as fast as the group takes it, delivered at member 0; lossy: netem $IMPAIR on member 1's link"
printf '%-6s %12s %12s %12s %12s %8s\n' path clean_msgs_s clean_MBps lossy_msgs_s lossy_MBps ratio
csv_header loss path size_bytes clean_msgs_per_s clean_MBps lossy_msgs_per_s lossy_MBps ratio
for p in smc rdmc; do
    r=$(ratio "${MSGS[${p}_lossy]}" "${MSGS[${p}_clean]}")
    printf '%-6s %12s %12s %12s %12s %8s\n' "$p" "${MSGS[${p}_clean]}" "${MBPS[${p}_clean]}" \
        "${MSGS[${p}_lossy]}" "${MBPS[${p}_lossy]}" "$r"
    csv_row loss "$p" "${SIZE[$p]}" "${MSGS[${p}_clean]}" \
        "${MBPS[${p}_clean]}" "${MSGS[${p}_lossy]}" "${MBPS[${p}_lossy]}" "$r"
done
echo
echo "# boot ms per VM: $boots; link cut to the last survivor's new view: $cut_ms ms"
csv_header cut cut_to_view_ms boot_s
csv_row cut "$cut_ms" "$boot_s"
echo "SUMMARY cluster members=$N boot_s=$boot_s lat_us=$lat bw_MBps=$bw lat_vm_us=$lat_vm" \
    "bw_vm_MBps=$bw_vm cut_to_view_ms=$cut_ms smc_loss_ratio=$smc_ratio rdmc_loss_ratio=$rdmc_ratio"
