# Minor versions of one major connect: member 1 claims wire version 1.0,
# member 2 speaks this build's. They connect and verify a round of
# traffic, and each says whether the other refuses a request it cannot
# take with a hello (wire 1.1 and later): a 1.0 member does not, so a
# group must never take its refusal without a hello for "nothing listens
# there any more" (rdma_sq_peer_refuses_with_hello).
. "$SRC/tests/vm/rdma_common.sh"
M=$(members 2 7545)
ARGS="$M --rounds 1 --no-perf --connect-timeout-ms 30000"
SQUALL_TEST_WIRE_MINOR=0 start 1 $ARGS
start 2 $ARGS
finish_ok 1 60
finish_ok 2 60
for i in 1 2; do
    expect "$OUT/$i.out" "member $i round 0 verified" "member $i's round"
done
expect "$OUT/2.out" "member 2: member 1 refuses with a hello: no" "the 1.0 member"
expect "$OUT/1.out" "member 1: member 2 refuses with a hello: yes" "the 1.1 member"
for i in 1 2; do show "$i"; done
echo "PASS: wire 1.0 and this build's 1.x connect; only the later refuses with a hello"
