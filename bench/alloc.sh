#!/usr/bin/env bash
# bench/alloc.sh: lease+release of squall's allocator against glibc
# malloc/free and jemalloc's malloc/free, natively (no RDMA, no VM).
#
# Every configuration (1 and 2 threads; fixed sizes 64 B .. 64 KiB and two
# mixes) runs four implementations one after the other, each in its own
# process: squall in two forms (`squall`: alloc_lease() of one buffer and
# alloc_release(), which alloc.h takes to the by-value calls; `squall_one`:
# alloc_lease_one() and alloc_release_one() called directly, the
# descriptor in registers as malloc's size and pointer are) and glibc, all in build/bench/alloc,
# which links libsquall.so and not jemalloc; jemalloc in
# build/bench/alloc_jemalloc, which links libjemalloc.so; one-thread runs
# of all on the same CPU (below). Each process prints the median over
# rounds of ns per step (one lease + one release, the thread's CPU time)
# and Mops/s (steps per second of all threads, wall clock). Every
# configuration runs REPEAT times (at least 5), the implementations
# taking turns, and its figures are the medians of those runs. The
# headline is 1 thread, 64 B-4 KiB, 64 live buffers; min_ratio_vs_jemalloc
# (alloc_lease/alloc_release) and min_one_ratio_vs_jemalloc (the one-
# buffer calls) are the lowest ratios of the fixed-size rows at every
# thread count.
#
# usage: scripts/bench alloc [ITERS [ROUNDS [REPEAT]]]
set -euo pipefail
: "${BUILD:?run through scripts/bench}"
iters=${1:-500000}
rounds=${2:-5}
repeat=${3:-5}
if [ "$repeat" -lt 5 ]; then
    echo "bench/alloc.sh: REPEAT must be at least 5" >&2
    exit 2
fi
sq=$BUILD/bench/alloc
je=$BUILD/bench/alloc_jemalloc
for b in "$sq" "$je"; do
    if [ ! -x "$b" ]; then
        echo "bench/alloc.sh: $b is missing (alloc_jemalloc needs libjemalloc-dev)" >&2
        exit 1
    fi
done

# One-thread runs are pinned to one CPU, the same for every
# implementation: the CPUs of a shared machine need not run alike (on a
# 2-CPU cloud machine, one ran every implementation's loop about 1.6x
# slower than the other for minutes at a time), and a run that lands on
# the slow one would otherwise decide a row.
# ALLOC_BENCH_CPU chooses it; the default is the first CPU this process
# may use. Runs of more threads use every CPU.
cpu=${ALLOC_BENCH_CPU:-$(taskset -cp $$ | sed 's/.*: *//; s/[-,].*//')}

# run IMPL THREADS LO HI -> "ns mops"
run() {
    local bin=$sq pin=()
    [ "$1" = jemalloc ] && bin=$je
    [ "$2" = 1 ] && pin=(taskset -c "$cpu")
    "${pin[@]}" "$bin" "$1" "$2" "$3" "$4" "$iters" "$rounds" |
        sed -n 's/.* ns=\([0-9.]*\) mops=\([0-9.]*\)$/\1 \2/p'
}

. "${SRC:-$(cd "$(dirname "$0")/.." && pwd)}/bench/lib/csv.sh"
csv_dir alloc

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

fixed=""  # "size threads squall_ns jemalloc_ns squall_one_ns" of each fixed-size row
configs="64:64 256:256 1024:1024 4096:4096 16384:16384 65536:65536 64:4096 64:65536"
printf '%-12s %3s | %10s %7s %10s %11s | %9s %9s %9s | %9s %11s %7s\n' \
    sizes thr squall_ns one_ns malloc_ns jemalloc_ns sq_Mops mal_Mops je_Mops vs_malloc vs_jemalloc one_vs_je
printf '%s\n' "-----------------------------------------------------------------------------------------------------------------------------"
# alloc.csv: the table; the size range is size_lo..size_hi (equal: one size).
# squall_*: alloc_lease()/alloc_release(); squall_one_*: alloc_lease_one()/
# alloc_release_one().
csv_header alloc size_lo_bytes size_hi_bytes threads squall_ns malloc_ns jemalloc_ns \
    squall_Mops_per_s malloc_Mops_per_s jemalloc_Mops_per_s vs_malloc vs_jemalloc \
    squall_one_ns squall_one_Mops_per_s one_vs_jemalloc
for t in 1 2; do
    for c in $configs; do
        lo=${c%:*}
        hi=${c#*:}
        n=$repeat
        declare -A ns=() mops=()
        for impl in squall squall_one malloc jemalloc; do
            ns[$impl]=""
            mops[$impl]=""
        done
        for ((i = 0; i < n; i++)); do
            for impl in squall squall_one malloc jemalloc; do
                read -r x y < <(run "$impl" "$t" "$lo" "$hi")
                ns[$impl]+="$x"$'\n'
                mops[$impl]+="$y"$'\n'
            done
        done
        for impl in squall squall_one malloc jemalloc; do
            ns[$impl]=$(printf '%s' "${ns[$impl]}" | median)
            mops[$impl]=$(printf '%s' "${mops[$impl]}" | median)
        done
        if [ "$lo" = "$hi" ]; then label="$lo"; else label="$lo-$hi"; fi
        awk -v l="$label" -v t="$t" -v a="${ns[squall]}" -v b="${ns[malloc]}" \
            -v c="${ns[jemalloc]}" -v ma="${mops[squall]}" -v mb="${mops[malloc]}" \
            -v mc="${mops[jemalloc]}" -v o="${ns[squall_one]}" 'BEGIN {
            printf "%-12s %3s | %10.2f %7.2f %10.2f %11.2f | %9.2f %9.2f %9.2f | %9.2f %11.2f %9.2f\n",
                l, t, a, o, b, c, ma, mb, mc, b / a, c / a, c / o }'
        read -ra row < <(awk -v lo="$lo" -v hi="$hi" -v t="$t" -v a="${ns[squall]}" \
            -v b="${ns[malloc]}" -v c="${ns[jemalloc]}" -v ma="${mops[squall]}" \
            -v mb="${mops[malloc]}" -v mc="${mops[jemalloc]}" -v o="${ns[squall_one]}" \
            -v mo="${mops[squall_one]}" 'BEGIN {
            printf "%s %s %s %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n",
                lo, hi, t, a, b, c, ma, mb, mc, b / a, c / a, o, mo, c / o }')
        csv_row alloc "${row[@]}"
        if [ "$t" = 1 ] && [ "$c" = 64:4096 ]; then
            head_sq=${ns[squall]} head_mal=${ns[malloc]} head_je=${ns[jemalloc]}
            head_one=${ns[squall_one]}
        fi
        if [ "$lo" = "$hi" ]; then
            fixed+="$lo $t ${ns[squall]} ${ns[jemalloc]} ${ns[squall_one]}"$'\n'
        fi
        unset ns mops
    done
done
echo
echo "ns: median ns per lease+release (thread CPU time); Mops: million lease+release per second, all threads"
echo "vs_*: reference ns / squall ns (above 1: squall is faster); 64 live buffers per thread;"
echo "squall: alloc_lease (n = 1) + alloc_release, which alloc.h takes to the by-value calls;"
echo "one: alloc_lease_one + alloc_release_one called directly, the descriptor in registers"
echo "as malloc's size and pointer; one_vs_je: jemalloc ns / one ns; medians of $repeat runs per row"
# lowest COL -> "ratio size threads": the lowest jemalloc_ns / (column COL
# of $fixed: 3 squall, 5 squall_one) over the fixed-size rows of both
# thread counts.
lowest() {
    printf '%s' "$fixed" | awk -v col="$1" '
        { r = $4 / $col; if (NR == 1 || r < m) { m = r; s = $1; t = $2 } }
        END { printf "%.3f %s %s\n", m, s, t }'
}
read -r min_ratio min_size min_thr < <(lowest 3)
read -r min_one min_one_size min_one_thr < <(lowest 5)
awk -v a="$head_sq" -v b="$head_mal" -v c="$head_je" -v m="$min_ratio" \
    -v ms="$min_size" -v mt="$min_thr" -v r="$repeat" -v o="$head_one" \
    -v mo="$min_one" -v mos="$min_one_size" -v mot="$min_one_thr" 'BEGIN {
    printf "SUMMARY alloc lease_release_ns=%.2f malloc_free_ns=%.2f jemalloc_ns=%.2f ratio_vs_malloc=%.2f ratio_vs_jemalloc=%.2f runs=%d min_ratio_size=%s min_ratio_threads=%s min_ratio_vs_jemalloc=%s lease_release_one_ns=%.2f one_ratio_vs_jemalloc=%.2f min_one_ratio_size=%s min_one_ratio_threads=%s min_one_ratio_vs_jemalloc=%s\n",
        a, b, c, b / a, c / a, r, ms, mt, m, o, c / o, mos, mot, mo }'
