#!/usr/bin/env bash
# bench/regcache.sh: what the registration cache costs, in one run.
#
# First, natively: the cost of a hit, squall's regcache against UCX's
# rcache (libucx-dev). Both caches hold N one-page regions with one-page
# gaps, registered by a callback that does nothing; the timed loop is
# get+put on random regions. Each configuration runs REPS times,
# alternating squall and UCX so that both see the same machine load; a run
# times 9 rounds and reports its best and median round; the table keeps,
# for each, the run with the best round (the machines are shared: the least
# disturbed round is the cost) and shows that run's median too.
#
# Then, on real verbs: bench/regcache_rdma.sh, two members on Soft-RoCE,
# in the VM (scripts/softroce-vm -n 2) unless this already runs where
# there is an RDMA device (SQUALL_HOST_RDMA=1, or SQUALL_VM=1 inside the
# VM). From it come the cost of a miss (regcache_get of 1 MiB of freshly
# mapped memory) and the crossover: the smallest message size from which a
# SEND straight from foreign memory through a cache hit is no slower than
# memcpy into the region + SEND, at that size and every larger one
# measured. That crossover is copy_threshold_bytes, the measured value for
# the .cfg setting group.copy_threshold.
set -euo pipefail
BUILD=${BUILD:-build}
SRC=${SRC:-$(cd "$(dirname "$0")/.." && pwd)}
export BUILD SRC
prog="$BUILD/bench/regcache"
REPS=${REPS:-3}
LOOKUPS=${LOOKUPS:-1000000}
[ -x "$prog" ] || { echo "missing $prog: build first" >&2; exit 1; }

run() { # impl n -> "hit_ns median_ns insert_ns"
    local impl=$1 n=$2 out
    out=$("$prog" "$impl" "$n" "$LOOKUPS") || { echo "$impl $n failed" >&2; exit 1; }
    echo "$out" | sed -n 's/.*insert_ns=\([0-9.]*\) hit_ns=\([0-9.]*\) hit_ns_median=\([0-9.]*\).*/\2 \3 \1/p'
}

declare -A hit med ins
for n in 1000 100000; do
    for impl in squall ucx; do hit[$impl.$n]=; done
    for ((r = 0; r < REPS; r++)); do
        for impl in squall ucx; do
            read -r h m i < <(run "$impl" "$n")
            if [ -z "${hit[$impl.$n]}" ] || awk "BEGIN{exit !($h < ${hit[$impl.$n]})}"; then
                hit[$impl.$n]=$h
                med[$impl.$n]=$m
                ins[$impl.$n]=$i
            fi
        done
    done
done

. "$SRC/bench/lib/csv.sh"
csv_dir regcache
# regcache.csv: the table, one row per entry count, UCX's columns beside
# squall's; the part on real verbs adds regcache_rdma_*.csv to the folder.
csv_header regcache entries squall_hit_ns squall_hit_ns_median squall_insert_ns_noop_register \
    ucx_hit_ns ucx_hit_ns_median ucx_insert_ns_noop_register
for n in 1000 100000; do
    csv_row regcache "$n" "${hit[squall.$n]}" "${med[squall.$n]}" "${ins[squall.$n]}" \
        "${hit[ucx.$n]}" "${med[ucx.$n]}" "${ins[ucx.$n]}"
done
export BENCH_CSV_DIR=$CSV_DIR
printf '%-8s %10s %10s %14s %26s\n' cache entries hit_ns hit_ns_median insert_ns_noop_register
for n in 1000 100000; do
    for impl in squall ucx; do
        printf '%-8s %10s %10s %14s %26s\n' "$impl" "$n" "${hit[$impl.$n]}" \
            "${med[$impl.$n]}" "${ins[$impl.$n]}"
    done
done
echo "(hit: get+put of a cached one-page region, random order, ${LOOKUPS} lookups a round, best of 9 rounds x ${REPS} runs;"
echo " insert: first get with a no-op register callback, including squall's userfaultfd watch; uptime load: $(cut -d' ' -f1-3 /proc/loadavg))"
ratio=$(awk "BEGIN{printf \"%.2f\", ${hit[ucx.100000]} / ${hit[squall.100000]}}")

# The part on real verbs. Its own SUMMARY line is kept as a plain line so
# that this driver ends with exactly one.
echo
echo "on real verbs (bench/regcache_rdma.sh, 2 members on one device):"
rdma=(bash "$SRC/bench/regcache_rdma.sh")
if [ "${SQUALL_HOST_RDMA:-0}" != 1 ] && [ "${SQUALL_VM:-0}" != 1 ]; then
    rdma=("$SRC/scripts/softroce-vm" -n 2 -t "${SQUALL_VM_TIMEOUT:-1800}" -- "${rdma[@]}")
fi
rlog=$(mktemp /tmp/squall-bench-regcache-rdma.XXXXXX)
trap 'rm -f "$rlog"' EXIT
if ! "${rdma[@]}" | tee "$rlog" | sed -u 's/^SUMMARY regcache_rdma /regcache_rdma: /'; then
    echo "regcache: the part on real verbs failed" >&2
    exit 1
fi
rsum=$(sed -n 's/^SUMMARY regcache_rdma //p' "$rlog" | tail -n1)
field() { # key -> value in the regcache_rdma SUMMARY
    printf '%s\n' "$rsum" | tr ' ' '\n' | sed -n "s/^$1=//p"
}
miss=$(field miss_us_1m)
cross=$(field zero_copy_wins_from)
case "$miss" in '' | *[!0-9.]*) echo "regcache: no miss_us_1m in: $rsum" >&2; exit 1 ;; esac
case "$cross" in
none) echo "(zero-copy lost to the copy path up to the largest size measured: copy_threshold_bytes=none)" ;;
'' | *[!0-9]*) echo "regcache: no zero_copy_wins_from in: $rsum" >&2; exit 1 ;;
esac
echo "(miss_us: regcache_get of 1 MiB of freshly mapped memory, median of the runs above;"
echo " copy_threshold_bytes: smallest size from which zero-copy through a cache hit is no slower than the copy path at every larger size)"
echo "SUMMARY regcache hit_ns_1k=${hit[squall.1000]} hit_ns_100k=${hit[squall.100000]} ucx_hit_ns_100k=${hit[ucx.100000]} ratio_vs_ucx=$ratio miss_us=$miss copy_threshold_bytes=$cross"
