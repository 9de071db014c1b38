# What applications do in upcalls, 4 members (see view_common.sh and
# view_member.c):
#  - echo: member 0 streams; members 1, 2 and 3 send nothing from their
#    own threads but answer each of member 0's messages with 8 ordered
#    sends from the deliver upcall, over a window of 4 slots. An upcall
#    send never waits (the progress thread running the upcall is what
#    frees the window): a send that finds no room is refused with
#    -EAGAIN, every accepted one is delivered everywhere, and everyone
#    closes;
#  - keep: every member keeps every 3rd delivery (its own messages
#    among them) and releases it only after the next view is installed;
#    member 2 is killed with kill -9 meanwhile. No kept delivery may
#    change while kept: the view change must not give its memory back;
#  - removed: member 3 is stopped (SIGSTOP) while all stream, until
#    the others removed it (their trim, pushed to it as a last word, says
#    which of its messages they deliver) and go on. When it runs again it
#    finds itself out and must be told, through send_failed, of exactly
#    the messages the others did not deliver: from the counter after the
#    last one they delivered, every one it sent.
N=4
SETS=${SETS:-sst.suspect_timeout_ms=4000}
RATE=${RATE:-100}
. "$SRC/tests/vm/view_common.sh"

SETS="$SETS smc.window=4"
EXTRA=([1]="--echo 8" [2]="--echo 8" [3]="--echo 8")
start_members echo
sleep 5
stop_streaming echo
finish_members echo "0 1 2 3" 180 0
check_survivors echo "0 1 2 3" "" 0,1,2,3 0
sent=0 refused=0
for i in 1 2 3; do
    sent=$((sent + $(val "$OUT/echo.$i.out" ECHO sent)))
    refused=$((refused + $(val "$OUT/echo.$i.out" ECHO refused)))
done
[ "$sent" -gt 0 ] || fail "echo: no send from an upcall was accepted"
[ "$refused" -gt 0 ] || fail "echo: no upcall send found the window full: the test did not test it"
echo "ok: echo: $sent sends from upcalls delivered everywhere, $refused refused for want of room, none waited"

SETS=${SETS% smc.window=4}
EXTRA=([0]="--keep 3" [1]="--keep 3" [2]="--keep 3" [3]="--keep 3")
start_members keep
sleep 3
kill_member 2
wait_views keep "0 1 3" 1 120
sleep 3
stop_streaming keep
finish_members keep "0 1 3" 300 0
check_survivors keep "0 1 3" 2 0,1,3 "${KILL_MS[2]}"
for i in 0 1 3; do
    [ "$(val "$OUT/keep.$i.out" KEPT damaged)" = 0 ] ||
        fail "keep: member $i: a kept delivery changed while kept (see its .err)"
done
echo "ok: keep: kept deliveries intact across the view change ($(for i in 0 1 3; do echo -n "$i:$(val "$OUT/keep.$i.out" KEPT kept) "; done)kept)"
EXTRA=()
start_members removed
sleep 3
t0=$(now_ms)
kill -STOP "${PID[3]}"
wait_views removed "0 1 2" 1 120
kill -CONT "${PID[3]}"
wait_line "$OUT/removed.3.out" "^STOPPED member=3 " 120 "${PID[3]}" ||
    fail "removed: member 3 did not find itself out within 120 s"
finish_members removed 3 120 3
sleep 2
stop_streaming removed
finish_members removed "0 1 2" 300 0
check_survivors removed "0 1 2" 3 0,1,2 "$t0"
check_unsent removed 3 "0 1 2"
echo "PASS"
