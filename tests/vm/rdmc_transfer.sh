# Four members, two senders: messages of 1, 3.5, 16, 64 MiB and 1 MiB + 12345
# bytes (sizes that are not multiples of the 1 MiB block included) go from
# members 0 and 1 at the same time to the whole group over RDMC (binomial
# pipeline). Every receiver checks every byte against the sender's pattern;
# all members must deliver the same sequence with the same checksums, the
# engine must count zero payload copies, and the byte counters must match
# the messages. Then member 3 cannot lease a buffer: member 0's send must
# fail naming it, and the other receivers' transfers must be cancelled.
set -u
MEMBER=${BUILD:?BUILD must name the build folder}/tests/vm/rdmc_member
CFG=${SRC:?SRC must name the source tree}/conf/local-4.cfg
[ -x "$MEMBER" ] || { echo "FAIL: $MEMBER is not built" >&2; exit 1; }
OUT=$(mktemp -d /tmp/squall-rdmc-test.XXXXXX)
declare -A PID
cleanup() {
    for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

show() {
    echo "--- member $1 stdout"; cat "$OUT/$1.out"
    echo "--- member $1 stderr"; cat "$OUT/$1.err"
}
fail() {
    echo "FAIL: $*"
    for i in 0 1 2 3; do show "$i"; done
    exit 1
}
expect() {
    grep -Eq -- "$2" "$1" || fail "$3: no line matching '$2' in $1"
}

SIZES="1,3.5,16,64,1+12345"
for i in 0 1 2 3; do
    "$MEMBER" "$CFG" "$i" --sizes "$SIZES" --enomem-member 3 --timeout-ms 900000 \
        >"$OUT/$i.out" 2>"$OUT/$i.err" &
    PID[$i]=$!
done
for i in 0 1 2 3; do
    t=0
    while kill -0 "${PID[$i]}" 2>/dev/null && [ $t -lt 9500 ]; do
        sleep 0.1; t=$((t + 1))
    done
    kill -0 "${PID[$i]}" 2>/dev/null && { kill -9 "${PID[$i]}"; fail "member $i hung"; }
    rc=0; wait "${PID[$i]}" || rc=$?
    unset "PID[$i]"
    [ "$rc" = 0 ] || fail "member $i exited with status $rc"
done

# Bytes in the messages of one sender: 1 + 3.5 + 16 + 64 + 1 MiB, + 12345.
ONE=$(( (1 + 16 + 64 + 1) * 1048576 + 1048576 * 7 / 2 + 12345 ))
for i in 0 1 2 3; do
    expect "$OUT/$i.out" "member $i OK" "member $i finished"
    expect "$OUT/$i.out" "member $i delivered 10 messages" "member $i delivered all"
    expect "$OUT/$i.out" "STATS member=$i .* payload_copies=0 " "member $i copied no payload"
    [ "$(grep -c '^DELIVER' "$OUT/$i.out")" = 10 ] || fail "member $i: not 10 deliveries"
    grep '^DELIVER' "$OUT/$i.out" >"$OUT/$i.seq"
done
for i in 1 2 3; do
    cmp -s "$OUT/0.seq" "$OUT/$i.seq" || {
        diff "$OUT/0.seq" "$OUT/$i.seq"
        fail "members 0 and $i delivered different sequences or checksums"
    }
done
# Every receiver verified every byte of the other senders' messages; the
# counters agree: members 2 and 3 got both senders' messages (and the last
# 4 KiB one), 0 and 1 the other's.
expect "$OUT/2.out" "verified $((2 * ONE)) bytes" "member 2 verified bytes"
expect "$OUT/3.out" "verified $((2 * ONE)) bytes" "member 3 verified bytes"
expect "$OUT/0.out" "verified $ONE bytes" "member 0 verified bytes"
expect "$OUT/1.out" "verified $ONE bytes" "member 1 verified bytes"
expect "$OUT/2.out" "bytes_received=$((2 * ONE + 4096)) " "member 2 byte counter"
expect "$OUT/0.out" "bytes_received=$ONE " "member 0 byte counter"
expect "$OUT/1.out" "bytes_received=$((ONE + 4096)) " "member 1 byte counter"
expect "$OUT/0.out" "transfers_sent=6 " "member 0's sends completed everywhere"
# The buffer member 3 could not lease.
expect "$OUT/3.out" "member 3 expect of [0-9]+ bytes: Cannot allocate memory" "member 3 lease fails"
expect "$OUT/0.out" "member 0 message of [0-9]+ bytes: status -12 .*member 3 could not lease a [0-9]+-byte buffer" "member 0's send fails naming member 3"
expect "$OUT/1.out" "member 1 message of [0-9]+ bytes: status -12 .*cancelled" "member 1's receive cancelled"
expect "$OUT/2.out" "member 2 message of [0-9]+ bytes: status -12 .*cancelled" "member 2's receive cancelled"
# ... and only once every receiver acknowledged that is it passed over:
# the stable callback for it, at every member.
for i in 0 1 2 3; do
    expect "$OUT/$i.out" "member $i: the cancellation is known at every member" "member $i learns every member knows of the cancellation"
done
for i in 0 1 2 3; do show "$i"; done
echo "PASS: 4 members, 2 senders, 10 messages delivered identically, every byte verified, 0 payload copies, a failed lease fails the send"
