#!/usr/bin/env bash
# squall-bench: vm 3
# SMC through the group API, 3 members of conf/local-3.cfg in one VM
# (bench/smc_bench.c): ordered messages delivered per second at each member
# and send-to-delivery latency, for 64 B, 1 KiB and smc.max_payload, with
# one sender (member 0) and with every member sending.
#   - throughput: senders send as fast as the window lets them for
#     SMC_BENCH_SECS seconds; a member's rate is what it delivered over
#     the time from the phase's barrier to its last delivery. The one-
#     sender figure is the lower of the two receivers'; the all-senders
#     figure the lowest of the three members' (each delivers every
#     sender's messages).
#   - latency: paced, one message in flight per sender (the next is sent
#     once the sender's own member delivered the previous one); now -
#     send stamp at every delivery on every member, CLOCK_MONOTONIC
#     shared by all members of the VM; median and p99 over all members'
#     deliveries together.
# Reference in the same VM run: ib_write_bw's message rate (MsgRate, Mpps
# column) at the same sizes on the same device, server on 10.77.0.1 and
# client from 10.77.0.2, the better of -t 16 and -t 128.
# A figure that could not be measured is named, and the driver exits
# non-zero without a SUMMARY line.
set -euo pipefail
BENCH=$BUILD/bench/smc_bench
CFG=$SRC/conf/local-3.cfg
DEV=${SQUALL_BENCH_DEVICE:-rxe0}
A1=10.77.0.1
A2=10.77.0.2
N=3
MAXP=$(sed -n 's/^ *max_payload *= *\([0-9]*\).*/\1/p' "$CFG" | head -n1)
SIZES=${SMC_BENCH_SIZES:-64,1024,$MAXP}
SECS=${SMC_BENCH_SECS:-3}
LATN=${SMC_BENCH_LAT_COUNT:-500}
BATCH=${SMC_BENCH_LEASE_BATCH:-1}
PF_SECS=${SMC_BENCH_PERFTEST_SECS:-3}
# Extra settings for every member, e.g. SMC_BENCH_SET="smc.window=1024"
# (space-separated section.key=value; the table then says so).
SETS=${SMC_BENCH_SET:-}
WINDOW=$(sed -n 's/^ *window *= *\([0-9]*\).*/\1/p' "$CFG" | head -n1)
for kv in $SETS; do
    case $kv in smc.window=*) WINDOW=${kv#*=} ;; esac
done
TRIES=3
OUT=$(mktemp -d /tmp/squall-bench-smc.XXXXXX)
# perftest's scratch on a tmpfs, as in the other drivers (the VM's /tmp
# is a 9p export).
SCRATCH=$(mktemp -d /dev/shm/squall-bench-smc.XXXXXX 2>/dev/null ||
    mktemp -d /tmp/squall-bench-smc-scratch.XXXXXX)
. "$SRC/bench/lib/common.sh"
. "$SRC/bench/lib/csv.sh"
csv_dir smc
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM
echo "# logs: $OUT"
missing=()
fail() { echo "bench/smc: $*" >&2; }
stop_all() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
}

# ---- squall: smc_bench, one process per member ----
ARGS="--config $CFG --out $OUT --sizes $SIZES --secs $SECS --lat-count $LATN --lease-batch $BATCH"
for kv in $SETS; do ARGS="$ARGS --set $kv"; done
echo "# smc_bench --id ID $ARGS"
ok=1
for i in $(seq 1 $((N - 1))); do
    timeout 1500 "$BENCH" --id "$i" $ARGS >"$OUT/m.$i" 2>&1 &
    pids+=($!)
done
timeout 1500 "$BENCH" --id 0 $ARGS >"$OUT/m.0" 2>&1 || ok=0
for p in "${pids[@]}"; do wait "$p" || ok=0; done
pids=()
cat "$OUT"/m.*
[ $ok = 1 ] || fail "smc_bench failed (logs above)"

# tput SIZE SENDERS: the lowest msgs_per_s over the members that receive
# from others (ranks 1.. with one sender, every member with all).
tput() {
    cat "$OUT"/m.* | awk -v s="$1" -v k="$2" '$1 == "TPUT" {
        split("", kv); for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
        if (kv["size"] == s && kv["senders"] == k && (k > 1 || kv["member"] != 0) &&
            (m == "" || kv["msgs_per_s"] + 0 < m + 0)) m = kv["msgs_per_s"]
    } END { print m }'
}
# lat SIZE SENDERS: "p50 p99" in us over every member's samples.
lat() {
    cat "$OUT"/lat."$1"."$2".* 2>/dev/null | sort -n | awk '{ a[NR] = $1 } END {
        if (NR) { i = int(NR * 0.99); if (i < NR * 0.99) i++
            printf "%.1f %.1f\n", a[int((NR + 1) / 2)] / 1e3, a[i] / 1e3 } }'
}

# ---- reference: ib_write_bw message rate ----
# ibwb SIZE DEPTH PORT: server on A1's GID, client from A2's GID; sets rate
# (msgs/s) from the client's MsgRate column (Mpps).
ibwb() {
    local s=$1 t=$2 port=$3 mpps
    local opts="-d $DEV -i 1 -p $port -s $s -t $t -D $PF_SECS"
    echo "# server: ib_write_bw $opts -x $X1"
    echo "# client: ib_write_bw $opts -x $X2 $A1"
    TMPDIR=$SCRATCH timeout 120 ib_write_bw $opts -x "$X1" >"$OUT/ibs.$s.$t" 2>&1 &
    pids+=($!)
    if ! wait_listen "" "$port" 60 "${pids[-1]}"; then
        fail "ib_write_bw -s $s -t $t: server not listening on port $port"
        cat "$OUT/ibs.$s.$t"
        stop_all
        return 1
    fi
    if ! TMPDIR=$SCRATCH timeout 120 ib_write_bw $opts -x "$X2" "$A1" >"$OUT/ibc.$s.$t" 2>&1; then
        fail "ib_write_bw -s $s -t $t: client failed"
        cat "$OUT/ibc.$s.$t" "$OUT/ibs.$s.$t"
        stop_all
        return 1
    fi
    wait "${pids[-1]}" || true
    pids=()
    # columns: #bytes #iterations BW_peak BW_average MsgRate[Mpps]
    grep -E '^ *#bytes|^ *'"$s"' ' "$OUT/ibc.$s.$t" || true
    mpps=$(awk -v s="$s" '$1 == s && NF >= 5 { print $5 }' "$OUT/ibc.$s.$t")
    [ -n "$mpps" ] || { fail "ib_write_bw -s $s -t $t: no result line"; cat "$OUT/ibc.$s.$t"; return 1; }
    rate=$(awk -v m="$mpps" 'BEGIN { printf "%.0f", m * 1e6 }')
}
declare -A pf
if X1=$(gid_index $A1) && X2=$(gid_index $A2); then
    port=18700
    for s in ${SIZES//,/ }; do
        for t in 16 128; do
            for ((try = 1; try <= TRIES; try++)); do
                port=$((port + 1))
                rate=
                if ibwb "$s" "$t" "$port"; then
                    echo "ib_write_bw -s $s -t $t: $rate msgs/s"
                    pf[$s]=$(awk -v a="${pf[$s]:-0}" -v b="$rate" 'BEGIN { print (b > a) ? b : a }')
                    break
                fi
                fail "ib_write_bw -s $s -t $t: attempt $try of $TRIES failed"
            done
        done
    done
else
    fail "ib_write_bw: no RoCE v2 GID for $A1 or $A2 on $DEV"
fi

# ---- the table ----
echo
echo "SMC ordered delivery through the group API, $N members (conf/local-3.cfg${SETS:+ with $SETS}: smc.window $WINDOW) vs ib_write_bw, same VM run"
echo "perftest: ib_write_bw MsgRate x 1e6, one QP $A2 -> $A1, -D $PF_SECS, better of -t 16 and -t 128"
echo "msgs/s: throughput run, ${SECS} s of sends as fast as the window allows (lease batch $BATCH), lowest over the receiving members;"
echo "latency: separate paced run, one message in flight per sender, $LATN messages per sender, send to delivery at every member (all members' deliveries)"
printf "%6s %8s %14s %14s %7s %9s %9s\n" size senders smc_msgs/s perftest_msgs/s ratio p50_us p99_us
# smc.csv: the table; p50/p99 are the paced run's, the rest the throughput run's.
csv_header smc size_bytes senders smc_msgs_per_s perftest_msgs_per_s ratio p50_us p99_us
for s in ${SIZES//,/ }; do
    for k in 1 $N; do
        a=$(tput "$s" "$k")
        l=$(lat "$s" "$k")
        p=${pf[$s]:-}
        ratio=-
        [ -n "$a" ] && [ -n "$p" ] && ratio=$(awk -v a="$a" -v b="$p" 'BEGIN { printf "%.3f", a / b }')
        [ -n "$a" ] || missing+=("msgs/s size $s senders $k")
        [ -n "$l" ] || missing+=("latency size $s senders $k")
        printf "%6s %8s %14s %14s %7s %9s %9s\n" "$s" "$k" "${a:--}" "${p:--}" "$ratio" ${l:--  -}
        csv_row smc "$s" "$k" "$a" "$p" "$ratio" ${l:--  -}
    done
done
first=${SIZES%%,*}
[ -n "${pf[$first]:-}" ] || missing+=("ib_write_bw -s $first")
[ $ok = 1 ] || missing+=("a clean smc_bench run")
if [ ${#missing[@]} -gt 0 ]; then
    fail "no SUMMARY: missing ${missing[*]} (logs in $OUT)"
    exit 1
fi
A=$(tput "$first" 1)
C=$(tput "$first" $N)
D=$(lat "$first" 1)
D=${D#* }
awk -v a="$A" -v b="${pf[$first]}" -v c="$C" -v d="$D" -v s="$first" 'BEGIN {
    printf "SUMMARY smc size=%s msgs_per_s=%.0f perftest_msgs_per_s=%.0f ratio=%.3f all_senders_msgs_per_s=%.0f p99_us=%s\n", s, a, b, a / b, c, d }'
