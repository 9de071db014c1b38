#!/usr/bin/env bash
# squall-bench: vm 4
# squall-bench: test-hooks
# Security: what a peer may not do, counted in one VM run on real rxe.
# It runs the VM tests that try each thing (their scripts assert every
# case; this driver counts what they printed) and ends with one line:
#   stray_writes    writes a member makes where it may not (view_stray4:
#                   one row too far in a peer's SST, into the next
#                   sender's SMC ring, into an RDMC buffer whose transfer
#                   ended), and stray_rejected: those the target refused,
#                   the writer removed by a view change and the others
#                   agreeing (vs_check);
#   reads_rejected  RDMA READs by a peer that must fail (use_once: a
#                   use-once region's old key on the window and on the
#                   registration path, and the member's region itself);
#   unauth_refused  impostors without the group key refused (auth3);
#   join_flood_view_ms  the view change's time with 50 silent and 1,000
#                   bogus join connections open (view_flood3).
# A test that fails is named, its log kept, and the driver exits non-zero
# without a SUMMARY line.
set -uo pipefail
OUT=$(mktemp -d /tmp/squall-bench-security.XXXXXX)
echo "# logs: $OUT"
. "$SRC/bench/lib/csv.sh"
csv_dir security
export SQUALL_VM=1 SQUALL_VM_MEMBERS=4
missing=()
# run MEMBERS TEST: tests/vm/TEST.sh in this VM, its output in OUT/TEST.log.
run() {
    echo "# tests/vm/run $1 tests/vm/$2.sh"
    if ! "$SRC/tests/vm/run" "$1" "$SRC/tests/vm/$2.sh" >"$OUT/$2.log" 2>&1; then
        tail -n 30 "$OUT/$2.log"
        echo "bench/security: $2 failed (log: $OUT/$2.log)" >&2
        missing+=("$2")
        return 1
    fi
    grep -E '^(ok|PASS)' "$OUT/$2.log" | cut -c1-240
}

run 4 view_stray4
stray=$(grep -c '^stray_round ' "$SRC/tests/vm/view_stray4.sh")
rejected=$(grep -c '^ok: [a-z]*: member [0-9]* wrote outside its grant and was removed' "$OUT/view_stray4.log")
run 2 use_once
reads=$(grep '^PASS' "$OUT/use_once.log" | grep -o 'failed with [^;]*remote access error' | wc -l)
run 3 auth3
unauth=$(grep -c '^ok: [a-z]*: the impostor with .* was refused' "$OUT/auth3.log")
run 3 view_flood3
flood=$(sed -n 's/^ok: joinflood: the view change ended in \([0-9]*\) ms.*/\1/p' "$OUT/view_flood3.log")

echo
printf "%-20s %8s\n" what count
# security.csv: the same table.
csv_header security what count
for kv in "stray_writes $stray" "stray_rejected $rejected" "reads_rejected $reads" \
    "unauth_refused $unauth" "join_flood_view_ms ${flood:--}"; do
    printf "%-20s %8s\n" $kv
    csv_row security $kv
done
[ -n "$flood" ] || missing+=("the join flood's view change time")
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench/security: no SUMMARY: missing ${missing[*]} (logs in $OUT)" >&2
    exit 1
fi
echo "SUMMARY security stray_writes=$stray stray_rejected=$rejected reads_rejected=$reads unauth_refused=$unauth join_flood_view_ms=$flood"
