# SMC through the group API, 3 members (see group_common.sh):
#  - all members send 6,667 messages of random sizes up to smc.max_payload
#    (20,001 in all): one delivered sequence, every byte checked, 0 copies;
#  - one sender, two idle members: the idle ones answer with null
#    messages, so every message is delivered;
#  - a receiver that keeps every slot 300 ms (window 64): senders wait for
#    the window (the receiver held a whole window at once) and nothing it
#    held was overwritten (re-checked byte by byte at release).
N=3
. "$SRC/tests/vm/group_common.sh"

run_members all 900 "$GM" --count 6667
check_order all

run_members idle 600 "$GM" --senders 1 --count 2000
check_order idle
echo "    one sender: send-to-delivery p50 $(field idle 0 lat_p50_us) us, p99 $(field idle 0 lat_p99_us) us (2,000 queued at once)"

# A small window (the same on every member: it is part of the group file's
# fingerprint) so that the holding member fills it many times over.
window=64
EXTRA[0]="--set smc.window=$window"
EXTRA[1]="--set smc.window=$window"
EXTRA[2]="--set smc.window=$window --hold-ms 300"
run_members hold 900 "$GM" --count 1500
check_order hold
[ "$(field hold 2 held_max)" -ge "$window" ] ||
    fail "hold: member 2 never held a whole window ($(field hold 2 held_max) of $window)"
w=$(( $(field hold 0 send_waits) + $(field hold 1 send_waits) ))
[ "$w" -gt 0 ] || fail "hold: the senders never waited for the window"
echo "ok: hold: member 2 held $(field hold 2 held_max) slots at once (window $window); senders waited $w times; nothing held was overwritten"
echo "PASS"
