# 1% loss and 5 ms delay on one member's link while SMC and RDMC traffic
# flows, 3 members in 3 VMs. view_member's default sizes (64 B to 8 KB
# through SMC, 200 KB through RDMC) at RATE per member, as fast as the
# group takes them; first STREAM_S seconds on clean links, then as long
# with netem "loss 1% delay 5ms" on both directions of member 1's link.
# In both runs: no view change, every message delivered to every member
# exactly once, intact, in one order (vs_check). The throughput of each
# run (messages and MB per second delivered at member 0) and their ratio
# are printed.
N=3
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-1000}
STREAM_S=${STREAM_S:-10}
IMPAIR=${IMPAIR:-loss 1% delay 5ms}
. "$SRC/tests/cluster/lib.sh"
# Average payload of the default sizes (64, 1000, 4000, 200000, 8000).
AVG_B=42612

view_args
start_cluster 1200 clean lossy -- "${VIEW_ARGS[@]}"
stream clean $AVG_B
clean_msgs=$THRU_MSGS clean_mbps=$THRU_MBPS
fault netem 1 $IMPAIR
stream lossy $AVG_B
echo "THROUGHPUT clean_msgs_s=$clean_msgs clean_MBps=$clean_mbps lossy_msgs_s=$THRU_MSGS lossy_MBps=$THRU_MBPS" \
    "ratio=$(awk -v a="$THRU_MSGS" -v b="$clean_msgs" 'BEGIN { printf "%.3f", b ? a / b : 0 }') impairment=\"$IMPAIR\" on member 1"
end_cluster 120
[ "$CLUSTER_RC" = 0 ] || fail "the cluster exited with status $CLUSTER_RC"
echo "PASS"
