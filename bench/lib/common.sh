# Sourced by the benchmark drivers that run perftest next to squall: the
# list of background processes to kill on exit, and the GID index lookup.
# The caller sets DEV (the RDMA device) before calling gid_index.
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done' EXIT INT TERM

# The GID index of an IPv4 address on the device (RoCE v2), from sysfs:
# never hard-coded, since it depends on the order addresses were added.
gid_index() {
    local addr=$1 hex g
    hex=$(printf '%02x%02x:%02x%02x' $(echo "$addr" | tr . ' '))
    for g in /sys/class/infiniband/$DEV/ports/1/gids/*; do
        local n=${g##*/}
        if [ "$(cat "$g")" = "0000:0000:0000:0000:0000:ffff:$hex" ] &&
           grep -q "RoCE v2" "/sys/class/infiniband/$DEV/ports/1/gid_attrs/types/$n" 2>/dev/null; then
            echo "$n"
            return
        fi
    done
    echo "no RoCE v2 GID for $addr on $DEV" >&2
    exit 1
}
