# Ordered sends of memory outside the region (group_send_mem), 3 members:
# member 0 sends from malloc'd memory freed and allocated again at the
# same address with new bytes, from a range unmapped and mapped again,
# from a merged range after a partial unmap, small foreign memory (the
# copy path), three ranges in flight at once with group_send_mem_async,
# memory not mapped at all (-EFAULT, nothing sent), and a
# range unmapped while it is sent. Every member checks
# every byte of every message it delivers, all deliver the same rounds in
# one order, in-place sends copy nothing, and the unmapped one is either
# delivered everywhere intact or (-EFAULT) nowhere.
N=3
. "$SRC/tests/vm/group_common.sh"
FM=$BUILD/tests/vm/foreign_member
[ -x "$FM" ] || fail "$FM is not built"

run_members foreign 600 "$FM" --set group.copy_threshold=64K

out0=$OUT/foreign.0.out
# The rounds member 0's sends say went out, and what the members say.
sent=$(grep -c '^SEND .* rc=0 ' "$out0")
grep -q '^SEND .*what=unmapped' "$out0" || fail "member 0 did not reach the unmapped round"
bad=$(grep '^SEND ' "$out0" | grep -v ' rc=0 ' | grep -v ' rc=-14 what=unmapped ' || true)
[ -z "$bad" ] || fail "a send failed: $bad"
h0=$(field foreign 0 hash)
for i in 0 1 2; do
    grep -q "^FOREIGN member=$i " "$OUT/foreign.$i.out" || fail "member $i printed no result"
    [ "$(field foreign "$i" bad)" = 0 ] || fail "member $i delivered wrong bytes"
    [ "$(field foreign "$i" delivered)" = "$sent" ] ||
        fail "member $i delivered $(field foreign "$i" delivered) messages; member 0 sent $sent"
    [ "$(field foreign "$i" hash)" = "$h0" ] || fail "member $i delivered another sequence"
done
echo "ok: 3 members delivered the $sent messages member 0 sent, every byte checked, one order (hash $h0)"

grep -q '^MALLOC same_addr=[1-3] ' "$out0" || fail "malloc never gave the same address again: $(grep '^MALLOC' "$out0")"
grep -q '^REMAP same_addr=1' "$out0" || fail "mmap did not map the same address again"
grep -q '^PARTIAL remapped=1' "$out0" || fail "the quarter was not mapped again in place"
echo "ok: new bytes at reused addresses: $(grep '^MALLOC' "$out0"), remap and partial unmap of a merged range in place"

stat() { # WHEN KEY: KEY's value in member 0's STATS line of WHEN
    awk -v w="when=$1" -v k="$2" '$1 == "STATS" && $2 == w {
        for (i = 3; i <= NF; i++) { split($i, p, "="); if (p[1] == k) print p[2] } }' "$out0"
}
[ "$(stat in_place copies)" = "$(stat before copies)" ] ||
    fail "in-place sends made copies: $(stat before copies) before, $(stat in_place copies) after"
[ "$(stat in_place sent_in_place)" -eq $(( $(stat before sent_in_place) + 10 )) ] ||
    fail "sent_in_place went from $(stat before sent_in_place) to $(stat in_place sent_in_place), not by 10"
[ "$(stat in_place payload_copies)" = 0 ] || fail "payload copies inside the transports"
# Every in-place send's first block misses or hits the cache, and memory
# mapped anew at a cached address must miss.
[ "$(stat in_place cache_misses)" -ge 6 ] || fail "fewer registration cache misses ($(stat in_place cache_misses)) than new mappings sent (6)"
grep -q '^ASYNC done=3 failed=0' "$out0" || fail "group_send_mem_async: $(grep '^ASYNC' "$out0")"
[ "$(stat async sent_in_place)" -eq $(( $(stat in_place sent_in_place) + 3 )) ] &&
    [ "$(stat async copies)" = "$(stat in_place copies)" ] ||
    fail "the three async sends were not counted in place, or copied"
echo "ok: group_send_mem_async: 3 in flight at once, 3 send_mem_done upcalls with 0, no copy"
[ "$(stat copied copies)" -eq $(( $(stat async copies) + 2 )) ] ||
    fail "the two small foreign sends were not counted as copies"
[ "$(stat copied bytes_copied)" -eq $(( $(stat async bytes_copied) + 20480 )) ] ||
    fail "bytes_copied did not grow by 20480"
echo "ok: counters: 10 in place ($(stat in_place bytes_in_place) bytes, copies unchanged at $(stat in_place copies)), 2 copied (20480 bytes), cache misses $(stat in_place cache_misses), hits $(stat in_place cache_hits)"
grep -q '^UNMAPPED rc=-14 ' "$out0" || fail "a send of memory not mapped: $(grep '^UNMAPPED' "$out0")"
echo "ok: memory not mapped is refused: $(sed -n 's/^UNMAPPED rc=-14 why=//p' "$out0")"
un=$(grep '^SEND .*what=unmapped' "$out0")
case "$un" in
    *" rc=0 "*) echo "ok: the range unmapped during its send was sent before it went (delivered everywhere intact)" ;;
    *" rc=-14 "*) echo "ok: the range unmapped during its send failed with -EFAULT and no member delivered it" ;;
    *) fail "unmapped round: $un" ;;
esac
grep -q '^SEND .* rc=0 what=after ' "$out0" || fail "the send after the unmapped one failed"
echo "PASS"
