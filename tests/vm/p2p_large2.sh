# Point-to-point messages of any size through the group API, 2 members
# (p2p_member.c says what each step sends): a lease larger than one SEND;
# a large ack sent from inside an upcall; a message the receiver has no
# room for when it comes, kept and read once room comes back; one it never
# gets room for, refused after the receiver's bound (-ENOBUFS, named); a
# length larger than the region (-EMSGSIZE); a small one from the stack;
# and 64 MiB of mmap'd memory sent in place through a use-once region,
# every byte checked by the receiver. Last, the receiver (test hook
# p2p_old_key) READs the 64 MiB region again with its old key: it must
# fail with a remote access error.
N=2
CFG=/tmp/squall-p2p-large2.$$.cfg
. "$SRC/tests/vm/group_common.sh"
PM=$BUILD/tests/vm/p2p_member
[ -x "$PM" ] || fail "$PM is not built"
CFG=$OUT/p2p.cfg
# Regions of 128 MiB: the 64 MiB message and the rest; the SST waits 6 s
# before it suspects a member (checking 64 MiB in an upcall under TCG takes
# a while).
cat >"$CFG" <<'CFGEOF'
group = {
  name = "p2p-large2";
  device = "rxe0";
  region_size = "128M";
  huge_pages = false;
  connect_timeout_ms = 30000;
  copy_threshold = 65536;
};
smc = {
  max_payload = 4096;
  window = 256;
};
rdmc = {
  block_size = "1M";
};
sst = {
  heartbeat_ms = 100;
  suspect_timeout_ms = 6000;
};
members = (
  { id = 0; address = "10.77.0.1"; port = 7840; },
  { id = 1; address = "10.77.0.2"; port = 7840; }
);
CFGEOF

"$PM" --config "$CFG" --id 0 >"$OUT/p2p.0.out" 2>"$OUT/p2p.0.err" &
PID[0]=$!
SQUALL_FAIL_AT=p2p_old_key:3 "$PM" --config "$CFG" --id 1 >"$OUT/p2p.1.out" 2>"$OUT/p2p.1.err" &
PID[1]=$!
for i in 0 1; do
    finish "$i" 240
    [ "$RC" = 0 ] || fail "member $i exited with status $RC"
done
o0=$OUT/p2p.0.out
o1=$OUT/p2p.1.out
has() { grep -Eq "$2" "$1" || fail "$3: no line /$2/ in $(basename "$1")"; }

has "$o0" '^A lease rc=0 len=1048579 max=4076$' "lease larger than one SEND"
has "$o1" '^RECV member=1 from=0 tag=1 len=1048579 ok=1$' "lease larger than one SEND"
has "$o0" '^RECV member=0 from=1 tag=1001 len=102400 ok=1$' "large send from an upcall"
echo "ok: a lease of 1048579 bytes (one SEND carries $(sed -n 's/^A .* max=//p' "$o0")) arrived whole; the 102400-byte answer sent from the receiver's upcall too"

has "$o0" '^B retry rc=0$' "kept for room"
has "$o1" '^RECV member=1 from=0 tag=2 len=16777216 ok=1$' "kept for room"
has "$o1" ' order_ok=1 ' "kept for room"
echo "ok: 16 MiB that found no room on arrival was kept, and read whole once the receiver gave its leases back"

has "$o0" '^C refused rc=-105 .*had no room for 16777216 bytes within 5000 ms' "refused"
echo "ok: no room within the bound: $(sed -n 's/^C refused rc=-105 ms=[0-9]* why=//p' "$o0")"
has "$o0" '^D too_large rc=-90 why=.*larger than a member.s region' "too large"
echo "ok: too large for any region: $(sed -n 's/^D too_large rc=-90 why=//p' "$o0")"

has "$o0" '^E small rc=0$' "small copy"
has "$o1" '^RECV member=1 from=0 tag=3 len=1000 ok=1$' "small copy"

has "$o0" '^F big rc=0 len=67108864 ' "64 MiB in place"
has "$o1" '^RECV member=1 from=0 tag=4 len=67108864 ok=1$' "64 MiB in place"
has "$o1" '^RESULT member=1 received=[0-9]+ bad=0 order_ok=1 ' "receiver result"
# 1 MiB lease, 16 MiB lease, the refused 16 MiB, the 64 MiB
has "$o0" '^STATS member=0 .* p2p_use_once=4 ' "p2p_use_once"
has "$o1" ' p2p_use_once=1$' "p2p_use_once of the receiver (its large ack)"
echo "ok: 64 MiB from mmap'd memory in place through a use-once region, every byte checked ($(sed -n 's/^F big rc=0 len=67108864 ms=\([0-9]*\).*/\1/p' "$o0") ms); $(sed -n 's/^STATS member=0 //p' "$o0")"

e1=$OUT/p2p.1.err
has "$e1" "^p2p_old_key: member 1 READs member 0's use-once region 0x[0-9a-f]+ \\(0x[0-9a-f]+, 67108864 bytes\\) again with the old key: posted$" "old key"
has "$e1" '^p2p_old_key: member 1: the READ with the old key failed: remote access error$' "old key"
! grep -q 'SUCCEEDED' "$e1" || fail "a READ with the old key succeeded"
echo "ok: $(grep '^p2p_old_key: member 1: the READ' "$e1")"

# The receiver dies (kill -9 from the test hook) half way through reading
# 64 MiB sent in place: the sender's call returns -ENOTCONN (its group of
# two stops), its memory its own again.
"$PM" --config "$CFG" --id 0 --die >"$OUT/die.0.out" 2>"$OUT/die.0.err" &
PID[0]=$!
SQUALL_DIE_AT=p2p_read_mid "$PM" --config "$CFG" --id 1 --die >"$OUT/die.1.out" 2>"$OUT/die.1.err" &
PID[1]=$!
finish 1 240
[ "$RC" = 137 ] || fail "die: member 1 exited with status $RC, not killed by its hook"
grep -q '^DYING .*why=test hook p2p_read_mid' "$OUT/die.1.err" || fail "die: member 1 did not die at p2p_read_mid"
finish 0 240
[ "$RC" = 0 ] || fail "die: member 0 exited with status $RC"
has "$OUT/die.0.out" '^K die rc=-107 why=.+' "die"
echo "ok: receiver killed mid-read: $(sed -n 's/^K die rc=-107 why=//p' "$OUT/die.0.out")"
echo "PASS"
