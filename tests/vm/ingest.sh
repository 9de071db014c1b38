# examples/ingest with the three members of conf/local-3.cfg: member 0
# leases 64 buffers of mixed sizes (4 KiB to 6 MiB) at once, four threads
# fill them out of order and send each when full, twice over (128 frames);
# every member must verify every frame, deliver the same bytes, and report
# no payload copy; the producer must have used both SMC and RDMC.
set -u
INGEST=${BUILD:?BUILD must name the build folder}/examples/ingest
CFG=$SRC/conf/local-3.cfg
FRAMES=128
[ -x "$INGEST" ] || { echo "FAIL: $INGEST is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/squall-ingest-test.XXXXXX)
. "$SRC/tests/vm/lib.sh"

show() {
    echo "--- member $1 stdout"; cat "$OUT/$1.out"
    echo "--- member $1 stderr"; cat "$OUT/$1.err"
}
fail() {
    echo "FAIL: $*"
    for i in 0 1 2; do show "$i"; done
    exit 1
}

t0=$(date +%s)
for i in 2 1 0; do
    "$INGEST" --config "$CFG" --id "$i" --frames "$FRAMES" --timeout-ms 600000 \
        >"$OUT/$i.out" 2>"$OUT/$i.err" &
    PID[$i]=$!
done
for i in 0 1 2; do
    finish "$i" 900
    [ "$RC" = 0 ] || fail "member $i exited with status $RC"
done
t1=$(date +%s)

plan=$(grep -m1 "^ingest: member 0 produces $FRAMES frames of " "$OUT/0.out") ||
    fail "member 0 did not say what it produces"
bytes=$(sed 's/.* frames of \([0-9]*\) bytes .*/\1/' <<<"$plan")
smc=$(sed 's/.*leases of 64 (\([0-9]*\) of at most.*/\1/' <<<"$plan")
[ "$smc" -gt 0 ] && [ "$smc" -lt "$FRAMES" ] ||
    fail "the frames' sizes do not mix SMC and RDMC: $plan"
sent=$(grep -m1 "^ingest: member 0 sent " "$OUT/0.out") || fail "member 0 gave no send counts"
grep -Eq "^ingest: member 0 sent $FRAMES \(SMC $smc, RDMC $((FRAMES - smc))\)" <<<"$sent" ||
    fail "member 0 did not send $smc frames on SMC and $((FRAMES - smc)) on RDMC: $sent"
for i in 0 1 2; do
    line=$(grep "^INGEST member=$i " "$OUT/$i.out") || fail "member $i printed no INGEST line"
    echo "$line"
    grep -Eq "^INGEST member=$i frames=$FRAMES bytes=$bytes bad=0 frames_per_s=[0-9.]+ MiB_per_s=[0-9.]+ copies=0$" <<<"$line" ||
        fail "member $i: want frames=$FRAMES bytes=$bytes bad=0 copies=0"
done
echo "$plan"
echo "$sent"
echo "PASS: 3 members verified $FRAMES frames ($bytes bytes, $smc on SMC) with no copy in $((t1 - t0)) s"
