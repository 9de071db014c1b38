# A send from foreign memory never uses a stale registration: member 1
# sends from memory it then frees (malloc 1 MiB, malloc 96 KiB), unmaps and
# maps again at the same address, or partly unmaps after the cache merged
# it; member 2 checks that every message carries the new bytes. The cache
# must have seen the unmaps (invalidations > 0) through its monitor.
. "$SRC/tests/vm/rdma_common.sh"
use_member regcache_member
run_member 2 --port 7620
run_member 1 --port 7620 --rounds 4
for i in 1 2; do
    finish "$i" 150; rc=$RC
    [ "$rc" = 0 ] || fail "member $i exited with status $rc"
done
expect "$OUT/1.out" "member 1 cache monitor: active" "the unmap monitor ran"
expect "$OUT/1.out" "member 1 malloc 1 MiB: 4 rounds, the same address came back in [1-3]" "malloc 1 MiB reuse"
expect "$OUT/1.out" "member 1 malloc 96 KiB: 4 rounds, the same address came back in [1-3]" "malloc 96 KiB reuse"
expect "$OUT/1.out" "member 1 mmap 1 MiB: 4 rounds" "mmap at the same address"
expect "$OUT/1.out" "member 1 partial munmap of a merged range: 2 rounds" "partial munmap"
expect "$OUT/1.out" "member 1 cache: hits=[0-9]+ misses=[1-9][0-9]* .*invalidations=[1-9][0-9]* merges=[1-9][0-9]* splits=[1-9][0-9]*" "cache statistics"
n=$(grep -c "all new" "$OUT/2.out" || true)
sent=$(sed -n 's/^member 1 sent \([0-9]*\) messages.*/\1/p' "$OUT/1.out")
[ -n "$sent" ] && [ "$n" = $((sent - 1)) ] || fail "member 2 checked $n messages, member 1 sent $sent (with the end)"
grep -q STALE "$OUT/2.out" && fail "member 2 got stale bytes"
expect "$OUT/2.out" "member 2 OK: every message had the new bytes" "member 2 verdict"
for i in 1 2; do show "$i"; done
# The control: without the monitor (and without regcache_invalidate) the
# cache keeps registrations of memory that is gone, and member 2 sees the
# old bytes: the check above can fail.
sum=$(grep 'member 1 cache:' "$OUT/1.out")
run_member 2 --port 7640
run_member 1 --port 7640 --rounds 2 --no-monitor
finish 1 150; rc1=$RC
finish 2 150; rc2=$RC
[ "$rc1" = 0 ] || fail "control: member 1 exited with status $rc1"
[ "$rc2" = 1 ] || fail "control: member 2 exited with status $rc2, want 1 (stale bytes seen)"
expect "$OUT/2.out" "member 2 STALE: gen [0-9]+ \(mmap 1 MiB" "control: stale bytes after mmap/munmap/mmap"
grep STALE "$OUT/2.out" | head -3
echo "PASS: $n sends from reused memory, every one carried the new bytes; $sum; without the monitor member 2 saw stale bytes"
