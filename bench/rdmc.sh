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
# Every reference step is retried; a step that still fails is named, the
# table shows what was measured, and the driver exits non-zero without a
# SUMMARY line, which needs every figure. MB = 2^20 bytes everywhere.
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
TRIES=3
OUT=$(mktemp -d /tmp/squall-bench-rdmc.XXXXXX)
# Scratch for iperf3 and Open MPI on a tmpfs: the VM's /tmp is a 9p export
# where iperf3 cannot use its unlinked buffer file ("unable to create a new
# stream: No such file or directory"), and its HOME is read-only.
SCRATCH=$(mktemp -d /dev/shm/squall-bench-rdmc.XXXXXX 2>/dev/null ||
    mktemp -d /tmp/squall-bench-rdmc-scratch.XXXXXX)
. "$SRC/bench/lib/common.sh"
. "$SRC/bench/lib/csv.sh"
csv_dir rdmc
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM
[ -x "$MPIB" ] || { echo "bench/rdmc: $MPIB not built (install libopenmpi-dev)" >&2; exit 1; }
echo "# logs: $OUT"

missing=()
fail() { echo "bench/rdmc: $*" >&2; }
# stop_all: end the background processes of a step that went wrong.
stop_all() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
}
# get FILE RECEIVERS SIZE FIELD: a field of a RESULT line.
get() {
    awk -v r="$2" -v s="$3" -v f="$4" '$1 == "RESULT" {
        split("", kv); for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
        if (kv["receivers"] == r && kv["size_mib"] == s) print kv[f] }' "$1"
}
nsizes=$(echo "$SIZES" | tr , '\n' | grep -c .)
big=${SIZES##*,}

# ---- RDMC ----
RARGS="--sizes $SIZES --receivers 1,2,3 --budget-mib $BUDGET"
echo "# rdmc: $BENCH $CFG ID $RARGS"
# rdmc_run [NAME [ARGS...]]: every member runs rdmc_bench with RARGS and
# ARGS, output in OUT/NAME.ID (NAME rdmc by default).
rdmc_run() {
    local i p ok=0 name=${1:-rdmc}
    shift || true
    for i in 1 2 3; do
        "$BENCH" "$CFG" "$i" $RARGS "$@" >"$OUT/$name.$i" 2>&1 &
        pids+=($!)
    done
    timeout 1200 "$BENCH" "$CFG" 0 $RARGS "$@" >"$OUT/$name.0" 2>&1 || ok=1
    if [ $ok = 0 ]; then
        for p in "${pids[@]}"; do wait "$p" || ok=1; done
    fi
    stop_all
    return $ok
}
if rdmc_run; then
    cat "$OUT/rdmc.0"
else
    cat "$OUT"/rdmc.*
    fail "rdmc_bench failed (logs above)"
fi
: >>"$OUT/rdmc.0"
[ -n "$(get "$OUT/rdmc.0" 3 "$big" aggregate_MBps)" ] || missing+=("aggregate_MBps (rdmc_bench)")

# ---- the same with one key over the whole region ----
# group.peer_access "region" against the default "windows" above (a
# window per writer and transfer): the largest size, 3 receivers.
echo "# rdmc: $BENCH $CFG ID $RARGS --sizes $big --receivers 3 --set group.peer_access=region"
if rdmc_run region --sizes "$big" --receivers 3 --set group.peer_access=region; then
    grep -v '^#' "$OUT/region.0" || true
else
    cat "$OUT"/region.*
    fail "rdmc_bench with group.peer_access=region failed (logs above)"
fi
: >>"$OUT/region.0"
[ -n "$(get "$OUT/region.0" 3 "$big" aggregate_MBps)" ] || missing+=("aggregate_MBps with group.peer_access=region")

# ---- the link: ib_write_bw ----
# ibwb Q PORT: one server and one client; sets bw (MB/s) on success.
ibwb() {
    local q=$1 port=$2 fig avg rate
    local opts="-d $DEV -i 1 -p $port -s 1048576 -t 16 -q $q -n 200"
    echo "# server: ib_write_bw $opts -x $X2"
    echo "# client: ib_write_bw $opts -x $X1 $A2"
    timeout 120 ib_write_bw $opts -x "$X2" >"$OUT/ibs.$q" 2>&1 &
    pids+=($!)
    if ! wait_listen "" "$port" 60 "${pids[-1]}"; then
        fail "ib_write_bw -q $q: server not listening on port $port"
        cat "$OUT/ibs.$q"
        stop_all
        return 1
    fi
    if ! timeout 120 ib_write_bw $opts -x "$X1" "$A2" >"$OUT/ibc.$q" 2>&1; then
        fail "ib_write_bw -q $q: client failed"
        cat "$OUT/ibc.$q" "$OUT/ibs.$q"
        stop_all
        return 1
    fi
    wait "${pids[-1]}" || true
    pids=()
    cat "$OUT/ibc.$q"
    # columns: #bytes #iterations BW_peak BW_average MsgRate; perftest's MB
    # is 2^20 bytes when BW_average = MsgRate * bytes / 2^20, else 10^6.
    fig=$(awk '$1 == 1048576 && NF >= 5 {print $4, $5}' "$OUT/ibc.$q")
    [ -n "$fig" ] || { fail "ib_write_bw -q $q: no 1 MiB line in its output"; return 1; }
    avg=${fig% *}
    rate=${fig#* }
    bw=$(awk -v a="$avg" -v r="$rate" 'BEGIN { u = r * 1e6 * 1048576 / a;
        printf "%.2f", (u > 1024000) ? a : a * 1e6 / 1048576 }')
}
best_link=
if X1=$(gid_index $A1) && X2=$(gid_index $A2); then
    port=18600
    for q in 1 3; do
        for ((t = 1; t <= TRIES; t++)); do
            port=$((port + 1))
            bw=
            if ibwb "$q" "$port"; then
                echo "ib_write_bw -q $q: $bw MB/s"
                best_link=$(awk -v a="${best_link:-0}" -v b="$bw" 'BEGIN { print (b > a) ? b : a }')
                break
            fi
            fail "ib_write_bw -q $q: attempt $t of $TRIES failed"
        done
    done
else
    fail "ib_write_bw: no RoCE v2 GID for $A1 or $A2 on $DEV"
fi
[ -n "$best_link" ] || missing+=("link_MBps (ib_write_bw)")

# ---- the TCP link: one iperf3 stream ----
# iperf PORT: a one-test server at A2 and a client from A1; sets tcp_link.
iperf() {
    local port=$1 mbit
    echo "# TMPDIR=$SCRATCH iperf3 -s -B $A2 -p $port -1; iperf3 -c $A2 -B $A1 -p $port -t 5 -f m"
    TMPDIR=$SCRATCH timeout 60 iperf3 -s -B $A2 -p "$port" -1 >"$OUT/iperf.s" 2>&1 &
    pids+=($!)
    if ! wait_listen "$A2" "$port" 30 "${pids[-1]}"; then
        fail "iperf3: server not listening on $A2:$port"
        cat "$OUT/iperf.s"
        stop_all
        return 1
    fi
    if ! TMPDIR=$SCRATCH timeout 60 iperf3 -c $A2 -B $A1 -p "$port" -t 5 -f m >"$OUT/iperf.c" 2>&1; then
        fail "iperf3: client failed"
        cat "$OUT/iperf.c" "$OUT/iperf.s"
        stop_all
        return 1
    fi
    wait "${pids[-1]}" || true
    pids=()
    cat "$OUT/iperf.c"
    mbit=$(awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { print v }' "$OUT/iperf.c")
    [ -n "$mbit" ] || { fail "iperf3: no receiver figure in its output"; return 1; }
    tcp_link=$(awk -v m="$mbit" 'BEGIN { printf "%.2f", m * 1e6 / 8 / 1048576 }')
}
tcp_link=
for ((t = 1; t <= TRIES; t++)); do
    iperf $((5200 + t)) && break
    fail "iperf3: attempt $t of $TRIES failed"
done
[ -n "$tcp_link" ] || missing+=("tcp_link_MBps (iperf3)")

# ---- Open MPI's MPI_Bcast ----
# Every rank runs in this VM (no ssh): mpirun launches them locally, one
# per member. btl tcp picks interfaces, not addresses, so all ranks use
# veth0; the addresses they connected to are read from btl_base_verbose.
: >"$OUT/mpi"
for np in 2 3 4; do
    cmd="mpirun --allow-run-as-root --oversubscribe --bind-to none -np $np --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include veth0 --mca btl_base_verbose 30 $MPIB --sizes $SIZES --budget-mib $BUDGET"
    echo "# TMPDIR=$SCRATCH HOME=$SCRATCH $cmd"
    done_np=0
    for ((t = 1; t <= TRIES; t++)); do
        if TMPDIR=$SCRATCH HOME=$SCRATCH timeout 900 $cmd >"$OUT/mpi.$np" 2>&1 &&
            [ "$(grep -c '^RESULT' "$OUT/mpi.$np")" = "$nsizes" ]; then
            done_np=1
            break
        fi
        grep -v 'btl:\|btl: \|mca: base\|select: ' "$OUT/mpi.$np" | tail -n 30
        fail "MPI_Bcast -np $np: attempt $t of $TRIES failed"
    done
    [ $done_np = 1 ] || continue
    grep '^RESULT' "$OUT/mpi.$np" | tee -a "$OUT/mpi"
done
[ -n "$(get "$OUT/mpi" 3 "$big" aggregate_MBps)" ] || missing+=("mpi_bcast_MBps (MPI_Bcast)")
mpi_addrs=$(cat "$OUT"/mpi.[0-9] 2>/dev/null | sed -n 's/.*connect() to \([0-9.]*\):[0-9]* completed.*/\1/p' | sort -u | paste -sd, -)

# ---- the table ----
echo
echo "RDMC vs MPI_Bcast, same VM run (MB = 2^20 bytes; aggregate = bytes delivered to all receivers per second)"
echo "link: ib_write_bw best of -q 1/-q 3 (-t 16, 1 MiB) = ${best_link:-missing} MB/s; TCP: iperf3 one stream $A1 -> $A2 = ${tcp_link:-missing} MB/s"
echo "MPI: all ranks local in the VM, btl tcp on veth0; its connections went to ${mpi_addrs:-unknown} (btl tcp takes an interface's first address: no per-rank address on one veth0)"
printf "%9s %9s %14s %16s %14s %16s\n" receivers size_MiB rdmc_ms/msg rdmc_agg_MBps mpi_ms/msg mpi_agg_MBps
# rdmc.csv: the table, with the two links it is judged against on every row.
csv_header rdmc receivers size_MiB rdmc_ms_per_msg rdmc_agg_MBps mpi_ms_per_msg mpi_agg_MBps \
    link_ib_write_bw_MBps tcp_link_iperf3_MBps
for r in 1 2 3; do
    for s in ${SIZES//,/ }; do
        row=()
        for f in "$OUT/rdmc.0 ms_per_msg" "$OUT/rdmc.0 aggregate_MBps" "$OUT/mpi ms_per_msg" "$OUT/mpi aggregate_MBps"; do
            v=$(get ${f% *} $r $s ${f##* })
            row+=("${v:--}")
        done
        printf "%9s %9s %14s %16s %14s %16s\n" "$r" "$s" "${row[@]}"
        csv_row rdmc "$r" "$s" "${row[@]}" "$best_link" "$tcp_link"
    done
done
if [ ${#missing[@]} -gt 0 ]; then
    fail "no SUMMARY: missing ${missing[*]} (logs in $OUT)"
    exit 1
fi
A=$(get "$OUT/rdmc.0" 3 "$big" aggregate_MBps)
C=$(get "$OUT/mpi" 3 "$big" aggregate_MBps)
R=$(get "$OUT/region.0" 3 "$big" aggregate_MBps)
echo "peers' access, 3 receivers, $big MiB: windows $A MB/s, the whole region's key $R MB/s"
awk -v a="$A" -v b="$best_link" -v c="$C" -v t="$tcp_link" -v s="$big" -v r="$R" 'BEGIN {
    rl = a / b; rm = (a / b) / (c / t);
    printf "SUMMARY rdmc size_mib=%s receivers=3 aggregate_MBps=%.2f link_MBps=%.2f ratio_link=%.3f mpi_bcast_MBps=%.2f tcp_link_MBps=%.2f ratio_vs_mpi=%.3f region_MBps=%.2f windows_vs_region=%.3f\n", s, a, b, rl, c, t, rm, r, a / r }'
