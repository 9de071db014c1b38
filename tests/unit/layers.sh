#!/usr/bin/env bash
# The transports know no group: nothing under rdma/, sst/, smc/ or rdmc/,
# nor their headers (squall/rdma.h, sst.h, smc.h, rdmc.h, wire.h),
# includes a header of group/ or the group's API (squall/config.h,
# squall/group.h). What they need of a group comes in as arguments
# (rdma_sq_group, sst_options). Usage: layers.sh SRCDIR
set -euo pipefail
src=$1
bad=$(cd "$src" && grep -nE '#include +["<](group/|squall/config\.h|squall/group\.h)' \
    rdma/*.[ch] sst/*.[ch] smc/*.[ch] rdmc/*.[ch] \
    include/squall/rdma.h include/squall/sst.h include/squall/smc.h \
    include/squall/rdmc.h include/squall/wire.h || true)
if [ -n "$bad" ]; then
    echo "FAIL: a transport includes the group:" >&2
    echo "$bad" >&2
    exit 1
fi
n=$(cd "$src" && ls rdma/*.[ch] sst/*.[ch] smc/*.[ch] rdmc/*.[ch] | wc -l)
echo "ok: $n files of rdma/, sst/, smc/ and rdmc/ include nothing of the group"
