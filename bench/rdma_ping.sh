#!/usr/bin/env bash
# squall-bench: vm 2
# rdma_ping between two members next to perftest (ib_write_lat, ib_write_bw)
# on the same RDMA device in the same run. Latency: half the ping-pong round
# trip of RDMA writes (what ib_write_lat reports); bandwidth: MB/s of 2^20
# bytes with 16 writes in flight (perftest's best setting on rxe, -t 16).
set -euo pipefail
PING=$BUILD/examples/rdma_ping
DEV=${SQUALL_BENCH_DEVICE:-rxe0}
A1=10.77.0.1
A2=10.77.0.2
SIZES="64 4096 65536 1048576"
OUT=$(mktemp -d /tmp/squall-bench-rdma.XXXXXX)
. "$SRC/bench/lib/common.sh"
. "$SRC/bench/lib/csv.sh"
csv_dir rdma_ping

X1=$(gid_index $A1)
X2=$(gid_index $A2)

# perftest PORT SERVER_ARGS -- CLIENT_ARGS: server on A2's GID, client on
# A1's GID connecting (TCP exchange) to A2; prints the client's output.
perftest() {
    local tool=$1 port=$2
    shift 2
    local cmd_s="$tool -d $DEV -i 1 -x $X2 -p $port $*"
    local cmd_c="$tool -d $DEV -i 1 -x $X1 -p $port $* $A2"
    echo "# server: $cmd_s" >&2
    echo "# client: $cmd_c" >&2
    timeout 300 $cmd_s >"$OUT/server.$port" 2>&1 &
    pids+=($!)
    sleep 1
    local tries=0
    until timeout 300 $cmd_c >"$OUT/client.$port" 2>&1; do
        tries=$((tries + 1))
        if [ $tries -ge 10 ]; then cat "$OUT/client.$port" "$OUT/server.$port" >&2; exit 1; fi
        sleep 1
    done
    wait "${pids[-1]}" || true
    cat "$OUT/client.$port"
}

M="--member 1,$A1,7601 --member 2,$A2,7602"
PARGS="--lat-iters 1000 --bw-bytes 67108864 --bw-depth 16 --op-timeout-ms 300000 --device $DEV"
echo "# rdma_ping: $PING --id N $M $PARGS"
"$PING" --id 2 $M $PARGS >"$OUT/ping2" 2>&1 &
pids+=($!)
"$PING" --id 1 $M $PARGS >"$OUT/ping1" 2>&1 || { cat "$OUT/ping1" "$OUT/ping2"; exit 1; }
wait "${pids[-1]}" || { cat "$OUT/ping2"; exit 1; }
cat "$OUT/ping1"

declare -A LAT BW PLAT PBW
for s in $SIZES; do
    line=$(grep "^PERF peer=2 bytes=$s " "$OUT/ping1")
    LAT[$s]=$(echo "$line" | sed 's/.*lat_med_us=\([0-9.]*\).*/\1/')
    BW[$s]=$(echo "$line" | sed 's/.*bw_MBps=\([0-9.]*\).*/\1/')
done

port=18515
for s in $SIZES; do
    n=1000
    [ "$s" -ge 65536 ] && n=200
    [ "$s" -ge 1048576 ] && n=50
    out=$(perftest ib_write_lat $port -s "$s" -n "$n")
    echo "$out"
    # columns: #bytes #iterations t_min t_max t_typical t_avg ...
    PLAT[$s]=$(echo "$out" | awk -v s="$s" '$1 == s && NF >= 6 {print $5}')
    port=$((port + 1))
done
for s in $SIZES; do
    n=20000
    [ "$s" -ge 4096 ] && n=5000
    [ "$s" -ge 65536 ] && n=1000
    [ "$s" -ge 1048576 ] && n=100
    out=$(perftest ib_write_bw $port -s "$s" -t 16 -n "$n")
    echo "$out"
    # columns: #bytes #iterations BW_peak BW_average MsgRate[Mpps]; perftest's
    # MB is 2^20 bytes when BW_average = MsgRate * bytes / 2^20.
    # (no process substitution: the VM has no /dev/fd)
    fig=$(echo "$out" | awk -v s="$s" '$1 == s && NF >= 5 {print $4, $5}')
    avg=${fig% *}
    rate=${fig#* }
    unit=$(awk -v a="$avg" -v r="$rate" -v s="$s" 'BEGIN { u = r * 1e6 * s / a; print (u > 1024000) ? "MiB" : "MB" }')
    if [ "$unit" = MB ]; then
        avg=$(awk -v a="$avg" 'BEGIN { printf "%.2f", a * 1e6 / 1048576 }')
    fi
    PBW[$s]=$avg
    port=$((port + 1))
done

echo
echo "rdma_ping vs perftest on $DEV, same VM run (MB/s of 2^20 bytes; latency = median half round trip)"
printf "%10s %14s %16s %14s %16s\n" bytes rdma_ping_us ib_write_lat_us rdma_ping_MBps ib_write_bw_MBps
# rdma_ping.csv: the table (latency: median half round trip; MB = 2^20 bytes).
csv_header rdma_ping size_bytes rdma_ping_lat_us ib_write_lat_us rdma_ping_MBps ib_write_bw_MBps
for s in $SIZES; do
    printf "%10s %14s %16s %14s %16s\n" "$s" "${LAT[$s]}" "${PLAT[$s]}" "${BW[$s]}" "${PBW[$s]}"
    csv_row rdma_ping "$s" "${LAT[$s]}" "${PLAT[$s]}" "${BW[$s]}" "${PBW[$s]}"
done
echo "SUMMARY rdma_ping lat64_us=${LAT[64]} ib_write_lat_us=${PLAT[64]} bw1m_MBps=${BW[1048576]} ib_write_bw_MBps=${PBW[1048576]}"
