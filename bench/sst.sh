#!/usr/bin/env bash
# squall-bench: vm 2
# The SST between two members next to ib_write_lat on the same RDMA device
# in the same run: time from a push until the peer's predicate sees it
# (half the ping-pong round trip, as ib_write_lat reports half the round
# trip of RDMA writes), the same when both members were asleep (wake-up),
# pushes/s from the application thread, and the idle CPU of a member with
# no traffic but heartbeats. Then, without RDMA, a million pushes landing
# in random pieces: what a reader accepted that was never pushed (must be
# 0), and the time to validate one segment.
set -euo pipefail
BENCH=$BUILD/bench/sst_bench
DEV=${SQUALL_BENCH_DEVICE:-rxe0}
A1=10.77.0.1
A2=10.77.0.2
ITERS=${SST_BENCH_ITERS:-2000}
OUT=$(mktemp -d /tmp/squall-bench-sst.XXXXXX)
. "$SRC/bench/lib/common.sh"
. "$SRC/bench/lib/csv.sh"
csv_dir sst


# perftest TOOL PORT ARGS...: server on A2's GID, client on A1's GID
# connecting (TCP exchange) to A2; prints the client's output.
perftest() {
    local tool=$1 port=$2 x1 x2
    shift 2
    x1=$(gid_index $A1)
    x2=$(gid_index $A2)
    local cmd_s="$tool -d $DEV -i 1 -x $x2 -p $port $*"
    local cmd_c="$tool -d $DEV -i 1 -x $x1 -p $port $* $A2"
    echo "# server: $cmd_s"
    echo "# client: $cmd_c"
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

# The host's load moves latencies a lot from one second to the next, so
# the SST's busy latency and ib_write_lat are measured in alternation,
# ROUNDS times each, and each side's figure is the median of its rounds.
ROUNDS=${SST_BENCH_ROUNDS:-3}
port=7650
xport=18515
sst_lat=()
spin_lat=()
ib_lat=()
ib_avg=()
run_pair() { # ARGS...: run members 1 and 2 with ARGS; output in $OUT/b1, $OUT/b2
    local M="--member 1,$A1,$((port + 1)) --member 2,$A2,$((port + 2))"
    port=$((port + 2))
    echo "# sst_bench: $BENCH --id N $M $*"
    "$BENCH" --id 2 $M "$@" >"$OUT/b2" 2>&1 &
    pids+=($!)
    "$BENCH" --id 1 $M "$@" >"$OUT/b1" 2>&1 || { cat "$OUT/b1" "$OUT/b2"; exit 1; }
    wait "${pids[-1]}" || { cat "$OUT/b2"; exit 1; }
}
for r in $(seq 1 "$ROUNDS"); do
    run_pair --iters "$ITERS" --busy-only
    grep -E "^(LAT|BUSY)" "$OUT/b1"
    sst_lat+=("$(grep "^LAT busy" "$OUT/b1" | sed 's/.* half_rtt_med_us=\([0-9.]*\).*/\1/')")
    # The same path with the idle policy out of the way (never sleeps):
    # what the push itself costs, apart from sleeping and waking.
    run_pair --iters "$ITERS" --busy-only --spin-us 1000000 --spin-max-us 1000000
    grep -E "^(LAT|BUSY)" "$OUT/b1"
    spin_lat+=("$(grep "^LAT busy" "$OUT/b1" | sed 's/.* half_rtt_med_us=\([0-9.]*\).*/\1/')")
    lat=$(perftest ib_write_lat "$xport" -s 8 -n "$ITERS")
    xport=$((xport + 1))
    echo "$lat" | grep -E "^ *(#bytes|8 )"
    # columns: #bytes #iterations t_min t_max t_typical t_avg ...
    ib_lat+=("$(echo "$lat" | awk '$1 == 8 && NF >= 6 {print $5}')")
    ib_avg+=("$(echo "$lat" | awk '$1 == 8 && NF >= 6 {print $6}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
busy=$(median "${sst_lat[@]}")
spin=$(median "${spin_lat[@]}")
ib=$(median "${ib_lat[@]}")

# Wake-up latency, pushes/s and idle CPU: one run.
run_pair --iters "$ITERS" --wake-iters 100 --pushes 50000 --idle-s 5
cat "$OUT/b1" "$OUT/b2"

field() { # FILE PREFIX KEY
    grep "^$2" "$1" | head -n1 | sed "s/.* $3=\([0-9.]*\).*/\1/"
}
wake=$(field "$OUT/b1" "LAT wake" half_rtt_med_us)
wake_p99=$(field "$OUT/b1" "LAT wake" half_rtt_p99_us)
sleeps=$(field "$OUT/b1" "WAKE" sleeps_during)
pps=$(field "$OUT/b1" "PUSHES" pushes_per_s)
wps=$(field "$OUT/b1" "PUSHES" writes_per_s)
idle1=$(field "$OUT/b1" "IDLE" cpu_pct)
idle2=$(field "$OUT/b2" "IDLE" cpu_pct)
idle=$(awk -v a="$idle1" -v b="$idle2" 'BEGIN { print (a > b) ? a : b }')

PLACEMENTS=${SST_BENCH_PLACEMENTS:-1000000}
echo "# sst_bench: $BENCH --placement $PLACEMENTS"
"$BENCH" --placement "$PLACEMENTS" >"$OUT/placement" || { cat "$OUT/placement"; exit 1; }
cat "$OUT/placement"
placed=$(field "$OUT/placement" PLACEMENT pushes)
pviol=$(field "$OUT/placement" PLACEMENT violations)
vns=$(field "$OUT/placement" PLACEMENT validate_ns)
ratio=$(awk -v a="$busy" -v b="$ib" 'BEGIN { printf "%.2f", a / b }')

echo
echo "SST vs ib_write_lat on $DEV, same VM run (8-byte column; latency = half round trip, median)"
printf "%-44s %s\n" measure value
# sst_rounds.csv: the alternating latency rounds; sst.csv: the table's
# single figures, one row per measure (the unit is in its name).
csv_header sst_rounds round sst_push_seen_us sst_push_seen_never_sleeping_us \
    ib_write_lat_typical_us ib_write_lat_avg_us
for ((r = 0; r < ROUNDS; r++)); do
    csv_row sst_rounds $((r + 1)) "${sst_lat[$r]:-}" "${spin_lat[$r]:-}" "${ib_lat[$r]:-}" "${ib_avg[$r]:-}"
done
csv_header sst measure value
for kv in "push_seen_busy_median_us=$busy" "push_seen_never_sleeping_median_us=$spin" \
    "ib_write_lat_typical_median_us=$ib" "push_seen_wake_median_us=$wake" \
    "push_seen_wake_p99_us=$wake_p99" "member1_sleeps_during_wake_test=$sleeps" \
    "pushes_per_s=$pps" "rdma_writes_per_s=$wps" "idle_cpu_pct_member1=$idle1" \
    "idle_cpu_pct_member2=$idle2" "placements_pushes=$placed" "placement_violations=$pviol" \
    "validate_segment_ns=$vns"; do
    csv_row sst "${kv%%=*}" "${kv#*=}"
done
printf "%-44s %s\n" "push seen by peer, busy, per round us" "${sst_lat[*]}"
printf "%-44s %s\n" "same, never sleeping (spin 1 s), per round" "${spin_lat[*]}"
printf "%-44s %s\n" "ib_write_lat -s 8 t_typical, per round us" "${ib_lat[*]}"
printf "%-44s %s\n" "ib_write_lat -s 8 t_avg, per round us" "${ib_avg[*]}"
printf "%-44s %s\n" "push seen by peer, busy, median of rounds" "$busy"
printf "%-44s %s\n" "same, never sleeping, median of rounds" "$spin"
printf "%-44s %s\n" "ib_write_lat t_typical, median of rounds" "$ib"
printf "%-44s %s\n" "push seen, both asleep (wake), median us" "$wake"
printf "%-44s %s\n" "push seen, both asleep (wake), p99 us" "$wake_p99"
printf "%-44s %s\n" "member 1 sleeps during the wake test" "$sleeps"
printf "%-44s %s\n" "pushes/s (application thread)" "$pps"
printf "%-44s %s\n" "RDMA writes/s behind them" "$wps"
printf "%-44s %s\n" "idle CPU %, member 1" "$idle1"
printf "%-44s %s\n" "idle CPU %, member 2" "$idle2"
printf "%-44s %s\n" "simulated placements (pushes)" "$placed"
printf "%-44s %s\n" "accepted values never pushed" "$pviol"
printf "%-44s %s\n" "validating one segment ($(field "$OUT/placement" PLACEMENT segment_bytes) bytes), ns" "$vns"
echo "SUMMARY sst push_seen_us=$busy ib_write_lat_us=$ib ratio=$ratio idle_cpu_pct=$idle placements=$placed placement_violations=$pviol validate_ns=$vns"
