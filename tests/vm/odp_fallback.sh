# On a device without on-demand paging (rxe before Linux 6.14, e.g.
# Debian 12's 6.1): the node says why it registers foreign memory pinned,
# sends from foreign memory (malloc/free, mmap/munmap at the same address
# and a partial munmap; regcache_member --expect pinned) still carry the
# new bytes through pinned cache registrations, an 8 MiB registration pins
# 8 MiB (VmPin), and the ODP counter stays 0.
# The ODP path itself is the 'odp' suite's test (tests/vm/odp.sh).
. "$SRC/tests/vm/rdma_common.sh"
use_member regcache_member
run_member 2 --port 7820
run_member 1 --port 7820 --rounds 3 --expect pinned
for i in 2 1; do
    finish "$i" 150; rc=$RC
    [ "$rc" = 0 ] || fail "member $i exited with status $rc"
done
expect "$OUT/1.out" "^member 1 odp: pinned: rxe[0-9]+: no ODP for RC send write read \(odp_caps: general_caps 0, rc_odp_caps 0\)$" "the reason ODP is not used"
expect "$OUT/1.out" "member 1 malloc 1 MiB: 3 rounds, the same address came back in [1-9]" "malloc 1 MiB reuse"
expect "$OUT/1.out" "member 1 mmap 1 MiB: 3 rounds" "mmap at the same address"
expect "$OUT/1.out" "^member 1 odp registrations=0 fallbacks=0; cache registrations=[1-9][0-9]* " "no ODP registration"
expect "$OUT/1.out" "^member 1 pinned by an 8 MiB cache registration: [0-9]+ kB" "VmPin"
expect "$OUT/1.out" "member 1 OK: the pinned path as expected" "member 1 verdict"
expect "$OUT/2.out" "member 2 OK: every message had the new bytes" "member 2 verdict"
for i in 1 2; do show "$i"; done
why=$(sed -n 's/^member 1 odp: pinned: //p' "$OUT/1.out")
cnt=$(sed -n 's/^member 1 \(odp registrations=[0-9]* fallbacks=[0-9]*\); cache \(registrations=[0-9]*\).*/\1, cache \2/p' "$OUT/1.out")
pin=$(sed -n 's/^member 1 pinned by an 8 MiB cache registration: //p' "$OUT/1.out")
echo "PASS: pinned path ($why); every send from reused memory carried the new bytes; $cnt; 8 MiB registration pinned $pin"
