# On-demand paging on a kernel whose rxe reports it (suite 'odp', run by
# tests/vm/odp_run, which boots such a Debian kernel in the VM). The node
# uses ODP only when the device reports it for RC send/write/read and its
# loopback check (a SEND from an on-demand registration, starting inside a
# page) delivers the right bytes. Either way member 1 sends from memory it
# frees and maps again at the same address (regcache_member --odp-report),
# and member 2 checks every byte.
#  - check passed: every cache registration counts as ODP, an 8 MiB
#    registration pins nothing (VmPin), the bytes are right with the unmap
#    monitor and without it (the device follows the page tables);
#  - check failed: the node says why and runs pinned with the right bytes;
#    with the check skipped (odp_unchecked) the registrations are ODP, pin
#    nothing, and member 2 gets wrong bytes: the defect the check caught.
# Both: rdma_sq_options.no_odp runs pinned and pins the 8 MiB, and pinned
# without the monitor sends stale bytes (the control). Last, figures of a
# send from fresh memory (miss, then hit) on demand against pinned
# (bench/regcache_rdma in the same VM run; printed, not judged).
. "$SRC/tests/vm/rdma_common.sh"
use_member regcache_member
# pair PORT WHAT WANT2 ARGS...: one run; member 2 must exit with WANT2
pair() {
    local port=$1 what=$2 want2=$3
    shift 3
    run_member 2 --port "$port"
    run_member 1 --port "$port" --rounds 3 --odp-report "$@"
    finish 1 200; rc1=$RC
    finish 2 200; rc2=$RC
    [ "$rc1" = 0 ] || fail "$what: member 1 exited with status $rc1"
    [ "$rc2" = "$want2" ] || fail "$what: member 2 exited with status $rc2, want $want2"
}
line() { sed -n "s/^member 1 $1//p" "$OUT/1.out"; }
echo "kernel: $(uname -r)"
pair 7840 "default options" 0
why=$(line 'odp: pinned: ')
case "$why" in
*"no ODP for RC"* | *"ibv_query_device_ex"*) fail "this kernel's rxe has no ODP: $why" ;;
esac
if [ -z "$why" ]; then
    verdict="the loopback check passed"
    pair 7850 "odp" 0 --expect odp
    expect "$OUT/1.out" "^member 1 odp: on demand$" "odp: the node registers on demand"
    expect "$OUT/1.out" "^member 1 pinned by an 8 MiB cache registration: 0 kB$" "odp: nothing pinned"
    expect "$OUT/1.out" "member 1 OK: the odp path as expected" "odp: member 1 verdict"
    expect "$OUT/2.out" "member 2 OK: every message had the new bytes" "odp: member 2 verdict"
    odp="$(line 'odp registrations=' | sed 's/^/registrations=/')"
    pair 7860 "odp without the monitor" 0 --expect odp --no-monitor
    expect "$OUT/2.out" "member 2 OK: every message had the new bytes" "odp without the monitor: new bytes"
    odp="$odp; without the monitor every byte new too"
else
    verdict="the loopback check refused ODP: $why"
    expect "$OUT/1.out" "^member 1 odp: pinned: rxe[0-9]+: reports ODP for RC \(rc_odp_caps 0x[0-9a-f]+\), but " "check: the reason"
    expect "$OUT/2.out" "member 2 OK: every message had the new bytes" "check: the pinned fallback sends the right bytes"
    pair 7850 "odp unchecked" 1 --expect odp --odp-unchecked
    expect "$OUT/1.out" "^member 1 odp: on demand$" "unchecked: the node registers on demand"
    expect "$OUT/1.out" "^member 1 pinned by an 8 MiB cache registration: 0 kB$" "unchecked: nothing pinned"
    expect "$OUT/1.out" "member 1 OK: the odp path as expected" "unchecked: every registration on demand"
    expect "$OUT/2.out" "member 2 STALE: gen [0-9]+" "unchecked: the device's defect shows"
    grep STALE "$OUT/2.out" | head -3
    odp="unchecked: $(line 'odp registrations=' | sed 's/^/registrations=/'), $(grep -c STALE "$OUT/2.out") of $(sed -n 's/^member 1 sent \([0-9]*\) messages.*/\1/p' "$OUT/1.out") messages with wrong bytes"
    bad=$(grep -m1 STALE "$OUT/2.out")
fi
for i in 1 2; do show "$i"; done

pair 7880 "pinned (no_odp)" 0 --expect pinned --no-odp
expect "$OUT/1.out" "^member 1 odp: pinned: ODP turned off \(rdma_sq_options.no_odp\)$" "no_odp: the reason"
expect "$OUT/1.out" "^member 1 odp registrations=0 fallbacks=0" "no_odp: no ODP registration"
expect "$OUT/2.out" "member 2 OK: every message had the new bytes" "no_odp: member 2 verdict"
pin=$(line 'pinned by an 8 MiB cache registration: ')

# The control: pinned, without the monitor, member 2 sees old bytes.
pair 7900 "pinned without the monitor" 1 --no-odp --no-monitor
expect "$OUT/2.out" "member 2 STALE: gen [0-9]+" "control: stale bytes on the pinned path without the monitor"

echo "--- figures (bench/regcache_rdma, same VM run; $( [ -z "$why" ] && echo "ODP checked" || echo "ODP unchecked: costs only, the bytes are wrong on this kernel"))"
BENCH=$BUILD/bench/regcache_rdma
if [ -x "$BENCH" ]; then
    extra=()
    [ -n "$why" ] && extra=(--odp-unchecked)
    "$BENCH" --id 2 --port 7920 "${extra[@]}" >"$OUT/b2.out" 2>"$OUT/b2.err" & PID[b2]=$!
    "$BENCH" --id 1 --port 7920 --iters "${ODP_ITERS:-9}" "${extra[@]}" >"$OUT/b1.out" 2>"$OUT/b1.err" & PID[b1]=$!
    finish b1 900; rcb1=$RC
    finish b2 60
    [ "$rcb1" = 0 ] || fail "bench/regcache_rdma exited with status $rcb1: $(cat "$OUT/b1.err")"
    echo "SEND round trip from fresh memory (us, medians of ${ODP_ITERS:-9}): the miss, then a hit"
    printf '%-10s %12s %12s %15s %15s\n' size odp_miss_us odp_hit_us pinned_miss_us pinned_hit_us
    sed -n 's/^odp size=\([0-9]*\) odp_miss_us=\([0-9.]*\) odp_hit_us=\([0-9.]*\) pinned_miss_us=\([0-9.]*\) pinned_hit_us=\([0-9.]*\)/\1 \2 \3 \4 \5/p' "$OUT/b1.out" |
        while read -r s a b c d; do printf '%-10s %12s %12s %15s %15s\n' "$s" "$a" "$b" "$c" "$d"; done
    grep -E '^(miss|send) size=|^odp registrations' "$OUT/b1.out" | sed 's/^/  (on-demand node) /'
else
    echo "(bench/regcache_rdma not built: no figures)"
fi
echo "PASS: $(uname -r): $verdict; $odp; no_odp pins $pin for 8 MiB; pinned without the monitor sends stale bytes${bad:+; first wrong message with ODP unchecked: $bad}"
