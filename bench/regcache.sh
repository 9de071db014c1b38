#!/usr/bin/env bash
# bench/regcache.sh: the cost of a registration cache hit, squall's
# regcache against UCX's rcache (libucx-dev), natively, in the same run.
#
# Both caches hold N one-page regions with one-page gaps, registered by a
# callback that does nothing; the timed loop is get+put on random regions.
# Each configuration runs REPS times, alternating squall and UCX so that
# both see the same machine load; a run times 9 rounds and reports its best
# and median round; the table keeps, for each, the run with the best round
# (the machines are shared: the least disturbed round is the cost) and
# shows that run's median too. Miss cost and the copy threshold need real
# verbs (the VM) and are measured elsewhere.
set -euo pipefail
BUILD=${BUILD:-build}
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
echo "SUMMARY regcache hit_ns_1k=${hit[squall.1000]} hit_ns_100k=${hit[squall.100000]} ucx_hit_ns_100k=${hit[ucx.100000]} ratio_vs_ucx=$ratio"
