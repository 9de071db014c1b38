# bench/lib/cluster_perf.sh OUTFILE: ib_write_lat (64 B) and ib_write_bw
# (1 MiB, 16 in flight) from 10.77.0.1 to 10.77.0.2 on rxe0, for
# bench/cluster.sh. Run by scripts/softroce-cluster -n 2 (member 1 the
# server, member 0 the client, each in its VM) or by scripts/softroce-vm
# -n 2 (both in one VM). The client writes perftest's result lines to
# OUTFILE: "lat_us=T" (t_typical) and "bw_MBps=B" (BW average, perftest's
# MB of 2^20 bytes, given in 1e6 bytes per second as squall's figures are).
set -euo pipefail
outfile=$1
DEV=${SQUALL_BENCH_DEVICE:-rxe0}
A1=10.77.0.1
A2=10.77.0.2
. "$SRC/bench/lib/common.sh"

# server TOOL PORT ARGS / client TOOL PORT ARGS
server() {
    local tool=$1 port=$2
    shift 2
    timeout 300 "$tool" -d "$DEV" -i 1 -x "$(gid_index $A2)" -p "$port" "$@"
}
client() {
    local tool=$1 port=$2 tries=0 out
    shift 2
    until out=$(timeout 300 "$tool" -d "$DEV" -i 1 -x "$(gid_index $A1)" -p "$port" "$@" $A2 2>&1); do
        tries=$((tries + 1))
        [ $tries -lt 60 ] || { echo "$out" >&2; echo "cluster_perf: $tool never reached $A2:$port" >&2; return 1; }
        sleep 1
    done
    echo "$out"
}

both() { # TOOL PORT ARGS: the server here in the background, then the client
    server "$@" >/dev/null 2>&1 &
    pids+=($!)
    client "$@"
    wait "${pids[-1]}" || true
}

run() { # TOOL PORT ARGS: this VM's part
    case "${SQUALL_MEMBER_ID:-pair}" in
    pair) both "$@" ;;
    0) client "$@" ;;
    1) server "$@" >/dev/null ;;
    *) return 0 ;;
    esac
}

lat=$(run ib_write_lat 18600 -s 64 -n 2000)
bw=$(run ib_write_bw 18601 -s 1048576 -t 16 -n 200)
[ "${SQUALL_MEMBER_ID:-pair}" != 1 ] || exit 0
echo "$lat"
echo "$bw"
# ib_write_lat columns: #bytes #iterations t_min t_max t_typical ...;
# ib_write_bw: #bytes #iterations BW_peak BW_average MsgRate (Mpps, too
# few digits at 1 MiB).
l=$(echo "$lat" | awk '$1 == 64 && NF >= 6 { print $5 }')
b=$(echo "$bw" | awk '$1 == 1048576 && NF >= 5 { printf "%.1f", $4 * 1.048576 }')
[ -n "$l" ] && [ -n "$b" ] || { echo "cluster_perf: no figures in perftest's output" >&2; exit 1; }
printf 'lat_us=%s\nbw_MBps=%s\n' "$l" "$b" >"$outfile"
