# Three members connect all-to-all (started out of order, one late, so the
# lower ids must retry) and exchange WRITE, READ, WRITE_WITH_IMM and
# SEND/RECV of 64 B..1 MiB for three rounds, verifying every byte.
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 3 7500)
ARGS="$M --rounds 3 --lat-iters 20 --bw-bytes 2000000 --connect-timeout-ms 30000"
start 2 $ARGS
start 1 $ARGS --verbose
sleep 2
start 3 $ARGS
for i in 1 2 3; do finish_ok "$i" 120; done
for i in 1 2 3; do
    expect "$OUT/$i.out" "member $i connected to 2 peers" "member $i connect"
    expect "$OUT/$i.out" "member $i round 2 verified: WRITE, READ, WRITE_WITH_IMM, SEND/RECV with 2 peers" "member $i verify"
    expect "$OUT/$i.out" "member $i OK: [1-9][0-9]* bytes received and verified" "member $i done"
done
# Member 1 (connecting to 3, which started 2 s late) had to retry.
expect "$OUT/1.err" "member 3 \(10\.77\.0\.3:7503\): .*retrying" "retry while member 3 was not up"
expect "$OUT/1.out" "PERF peer=2 bytes=1048576 lat_avg_us=[0-9.]+ lat_med_us=[0-9.]+ bw_MBps=[0-9.]+" "perf to 2"
expect "$OUT/1.out" "PERF peer=3 bytes=64 " "perf to 3"
for i in 1 2 3; do show "$i"; done
echo "PASS: 3 members exchanged and verified WRITE, READ, WRITE_WITH_IMM, SEND/RECV"
