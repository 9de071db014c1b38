#!/usr/bin/env bash
# bench/alloc.sh: lease+release of squall's allocator against glibc
# malloc/free and jemalloc mallocx/dallocx, natively (no RDMA, no VM).
#
# Every configuration (1 and 2 threads; fixed sizes 64 B .. 64 KiB and two
# mixes) runs the three implementations one after the other, each in its
# own process: glibc in build/bench/alloc, which does not link jemalloc,
# jemalloc in build/bench/alloc_jemalloc. Each process prints the median
# over rounds of ns per step (one lease + one release, the thread's CPU
# time) and Mops/s (steps per second of all threads, wall clock). The
# headline configuration (1 thread, 64 B-4 KiB, 64 live buffers) runs
# REPEAT times and its figures are the medians of those runs.
#
# usage: scripts/bench alloc [ITERS [ROUNDS [REPEAT]]]
set -euo pipefail
: "${BUILD:?run through scripts/bench}"
iters=${1:-500000}
rounds=${2:-5}
repeat=${3:-3}
sq=$BUILD/bench/alloc
je=$BUILD/bench/alloc_jemalloc
for b in "$sq" "$je"; do
    if [ ! -x "$b" ]; then
        echo "bench/alloc.sh: $b is missing (alloc_jemalloc needs libjemalloc-dev)" >&2
        exit 1
    fi
done

# run IMPL THREADS LO HI -> "ns mops"
run() {
    local bin=$sq
    [ "$1" = jemalloc ] && bin=$je
    "$bin" "$1" "$2" "$3" "$4" "$iters" "$rounds" |
        sed -n 's/.* ns=\([0-9.]*\) mops=\([0-9.]*\)$/\1 \2/p'
}

. "${SRC:-$(cd "$(dirname "$0")/.." && pwd)}/bench/lib/csv.sh"
csv_dir alloc

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

configs="64:64 256:256 1024:1024 4096:4096 16384:16384 65536:65536 64:4096 64:65536"
printf '%-12s %3s | %10s %10s %11s | %9s %9s %9s | %9s %11s\n' \
    sizes thr squall_ns malloc_ns jemalloc_ns sq_Mops mal_Mops je_Mops vs_malloc vs_jemalloc
printf '%s\n' "----------------------------------------------------------------------------------------------------------------"
# alloc.csv: the table; the size range is size_lo..size_hi (equal: one size).
csv_header alloc size_lo_bytes size_hi_bytes threads squall_ns malloc_ns jemalloc_ns \
    squall_Mops_per_s malloc_Mops_per_s jemalloc_Mops_per_s vs_malloc vs_jemalloc
for t in 1 2; do
    for c in $configs; do
        lo=${c%:*}
        hi=${c#*:}
        n=1
        [ "$t" = 1 ] && [ "$c" = 64:4096 ] && n=$repeat
        declare -A ns=() mops=()
        for impl in squall malloc jemalloc; do
            ns[$impl]=""
            mops[$impl]=""
        done
        for ((i = 0; i < n; i++)); do
            for impl in squall malloc jemalloc; do
                read -r x y < <(run "$impl" "$t" "$lo" "$hi")
                ns[$impl]+="$x"$'\n'
                mops[$impl]+="$y"$'\n'
            done
        done
        for impl in squall malloc jemalloc; do
            ns[$impl]=$(printf '%s' "${ns[$impl]}" | median)
            mops[$impl]=$(printf '%s' "${mops[$impl]}" | median)
        done
        if [ "$lo" = "$hi" ]; then label="$lo"; else label="$lo-$hi"; fi
        awk -v l="$label" -v t="$t" -v a="${ns[squall]}" -v b="${ns[malloc]}" \
            -v c="${ns[jemalloc]}" -v ma="${mops[squall]}" -v mb="${mops[malloc]}" \
            -v mc="${mops[jemalloc]}" 'BEGIN {
            printf "%-12s %3s | %10.2f %10.2f %11.2f | %9.2f %9.2f %9.2f | %9.2f %11.2f\n",
                l, t, a, b, c, ma, mb, mc, b / a, c / a }'
        read -ra row < <(awk -v lo="$lo" -v hi="$hi" -v t="$t" -v a="${ns[squall]}" \
            -v b="${ns[malloc]}" -v c="${ns[jemalloc]}" -v ma="${mops[squall]}" \
            -v mb="${mops[malloc]}" -v mc="${mops[jemalloc]}" 'BEGIN {
            printf "%s %s %s %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n",
                lo, hi, t, a, b, c, ma, mb, mc, b / a, c / a }')
        csv_row alloc "${row[@]}"
        if [ "$t" = 1 ] && [ "$c" = 64:4096 ]; then
            head_sq=${ns[squall]} head_mal=${ns[malloc]} head_je=${ns[jemalloc]}
        fi
        unset ns mops
    done
done
echo
echo "ns: median ns per lease+release (thread CPU time); Mops: million lease+release per second, all threads"
echo "vs_*: reference ns / squall ns (above 1: squall is faster); 64 live buffers per thread"
awk -v a="$head_sq" -v b="$head_mal" -v c="$head_je" 'BEGIN {
    printf "SUMMARY alloc lease_release_ns=%.2f malloc_free_ns=%.2f jemalloc_ns=%.2f ratio_vs_malloc=%.2f ratio_vs_jemalloc=%.2f\n",
        a, b, c, b / a, c / a }'
