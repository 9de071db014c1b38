#!/usr/bin/env bash
# tests/unit/programs.sh BUILD SRC: the programs help a new user. Each
# takes --help (usage on stdout, exit status 0), and a member started
# where no RDMA device owns its address says what to do: give the
# interface a Soft-RoCE device (rdma link add ...), list devices with
# ibv_devices, or use the Soft-RoCE VM (scripts/softroce-vm).
set -euo pipefail
build=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
for p in examples/kvstore examples/ingest examples/bandwidth examples/rdma_ping tools/squall-keygen tools/squall-stat; do
    out=$("$build/$p" --help) || fail "$p --help exited with status $?"
    case "$out" in usage:*) ;; *) fail "$p --help printed no usage: $out" ;; esac
    echo "ok: $p --help: $(head -n1 <<<"$out" | cut -c1-70)..."
done
# One member on the loopback address: no RDMA device owns it, here or
# on a host with RDMA NICs.
tmp=$(mktemp -d /tmp/squall-programs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sed 's/address = "10\.77\.0\.\([0-9]*\)"; port = 7400/address = "127.0.0.1"; port = 750\1/' \
    "$src/conf/local-3.cfg" >"$tmp/lo.cfg"
grep -q '127.0.0.1' "$tmp/lo.cfg" || fail "could not make a loopback group file"
rc=0
"$build/examples/kvstore" --config "$tmp/lo.cfg" --id 0 --random 1 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" != 0 ] || fail "kvstore started with no RDMA device on its address"
for want in 'rdma link add rxe0 type rxe netdev IFACE' 'ibv_devices' 'scripts/softroce-vm'; do
    grep -qF "$want" "$tmp/err" || fail "the error does not say \"$want\": $(cat "$tmp/err")"
done
echo "ok: no RDMA device: $(grep -o 'member 0: [^.]*' "$tmp/err" | tail -n1)"
