#!/usr/bin/env bash
# bench/regcache_rdma.sh: the registration cache on real verbs, two members
# on the Soft-RoCE device, in the same run:
#  - miss: regcache_get() of new memory through the node's cache against a
#    bare ibv_reg_mr of the same size, and a hit on it afterwards;
#  - send from foreign memory: round trip of a SEND straight from malloc'd
#    memory (lkey from a cache hit) against memcpy into the region + SEND,
#    by size, each answered by a 64-byte SEND;
#  - where the device pages memory on demand (ODP): a SEND round trip from
#    fresh memory (cache miss) and again (hit) with on-demand registrations
#    against pinned ones (a second node with rdma_sq_options.no_odp).
#    Another Debian kernel: SQUALL_VM_KERNEL=trixie-backports/linux-image-amd64
#    scripts/bench regcache_rdma (scripts/softroce-vm -k). ODP_UNCHECKED=1
#    takes ODP on the device's word where the node's loopback check
#    refuses it (rdma_sq_options.odp_unchecked: costs only, the bytes may
#    be wrong).
# Medians of ITERS repetitions. Under TCG absolute times mean little:
# compare the columns of one run. Runs on its own (scripts/bench
# regcache_rdma) and as the second half of bench/regcache.sh, which reads
# miss_us_1m and zero_copy_wins_from from the SUMMARY line below.
# squall-bench: vm 2
set -euo pipefail
BUILD=${BUILD:-build}
prog="$BUILD/bench/regcache_rdma"
ITERS=${ITERS:-21}
[ -x "$prog" ] || { echo "missing $prog: build first" >&2; exit 1; }
out=$(mktemp -d /tmp/squall-bench-regcache.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
extra=()
[ "${ODP_UNCHECKED:-0}" = 1 ] && extra=(--odp-unchecked)
"$prog" --id 2 --port 7720 "${extra[@]}" >"$out/2.out" 2>"$out/2.err" & pids+=($!)
"$prog" --id 1 --port 7720 --iters "$ITERS" "${extra[@]}" >"$out/1.out" 2>"$out/1.err" & pids+=($!)
for p in "${pids[@]}"; do
    wait "$p" || { echo "a member failed:" >&2; cat "$out"/*.err >&2; exit 1; }
done
pids=()
# regcache_rdma_miss.csv and regcache_rdma_send.csv: the two tables.
. "$(dirname "$0")/lib/csv.sh"
csv_dir regcache_rdma
csv_header regcache_rdma_miss size_bytes cache_miss_us ibv_reg_mr_us hit_ns
csv_header regcache_rdma_send size_bytes zero_copy_rtt_us copy_rtt_us
printf '%-10s %14s %14s %10s\n' size cache_miss_us ibv_reg_mr_us hit_ns
sed -n 's/^miss size=\([0-9]*\) cache_us=\([0-9.]*\) reg_mr_us=\([0-9.]*\) hit_ns=\([0-9]*\)/\1 \2 \3 \4/p' "$out/1.out" |
    while read -r s a b h; do
        printf '%-10s %14s %14s %10s\n' "$s" "$a" "$b" "$h"
        csv_row regcache_rdma_miss "$s" "$a" "$b" "$h"
    done
echo
printf '%-10s %16s %12s\n' size zero_copy_rtt_us copy_rtt_us
sed -n 's/^send size=\([0-9]*\) zero_copy_us=\([0-9.]*\) copy_us=\([0-9.]*\)/\1 \2 \3/p' "$out/1.out" |
    while read -r s a b; do
        printf '%-10s %16s %12s\n' "$s" "$a" "$b"
        csv_row regcache_rdma_send "$s" "$a" "$b"
    done
echo "(medians of $ITERS; miss = regcache_get of freshly mapped, faulted-in memory; rtt = SEND + 64-byte answer)"
odp=no
if grep -q '^odp: on demand' "$out/1.out"; then
    odp=yes
    echo
    echo "on-demand paging against pinned registrations (SEND rtt from fresh memory: miss, then hit):"
    printf '%-10s %12s %12s %15s %15s\n' size odp_miss_us odp_hit_us pinned_miss_us pinned_hit_us
    sed -n 's/^odp size=\([0-9]*\) odp_miss_us=\([0-9.]*\) odp_hit_us=\([0-9.]*\) pinned_miss_us=\([0-9.]*\) pinned_hit_us=\([0-9.]*\)/\1 \2 \3 \4 \5/p' "$out/1.out" |
        while read -r s a b c d; do
            printf '%-10s %12s %12s %15s %15s\n' "$s" "$a" "$b" "$c" "$d"
        done
    grep '^odp registrations=' "$out/1.out" || true
    echo "(the tables above ran on the on-demand node$(grep -q '^odp: on demand (unchecked)' "$out/1.out" && echo ', ODP unchecked: the bytes may be wrong'))"
else
    sed -n 's/^odp: pinned: /(no on-demand paging: /p' "$out/1.out" | sed 's/$/)/'
fi
odp1m=$(sed -n 's/^odp size=1048576 odp_miss_us=\([0-9.]*\) odp_hit_us=\([0-9.]*\) pinned_miss_us=\([0-9.]*\) pinned_hit_us=\([0-9.]*\)/odp_miss_us_1m=\1 odp_hit_us_1m=\2 pinned_miss_us_1m=\3 pinned_hit_us_1m=\4/p' "$out/1.out")
miss1m=$(sed -n 's/^miss size=1048576 cache_us=\([0-9.]*\) reg_mr_us=\([0-9.]*\).*/\1 \2/p' "$out/1.out")
# the smallest size from which the zero-copy send is no slower than the copy
# at every larger size measured
cross=$(sed -n 's/^send size=\([0-9]*\) zero_copy_us=\([0-9.]*\) copy_us=\([0-9.]*\)/\1 \2 \3/p' "$out/1.out" |
    awk '{ s[NR] = $1; w[NR] = $2 <= $3 } END { c = "none"; for (i = NR; i >= 1 && w[i]; i--) c = s[i]; print c }')
zc1m=$(sed -n 's/^send size=1048576 zero_copy_us=\([0-9.]*\) copy_us=\([0-9.]*\)/\1 \2/p' "$out/1.out")
rm -rf "$out"
echo "SUMMARY regcache_rdma miss_us_1m=${miss1m% *} reg_mr_us_1m=${miss1m#* } zero_copy_rtt_us_1m=${zc1m% *} copy_rtt_us_1m=${zc1m#* } zero_copy_wins_from=$cross odp=$odp${odp1m:+ $odp1m}"
