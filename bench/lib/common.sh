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

# wait_listen ADDR PORT SECS [PID]: wait until a TCP socket listens on
# ADDR:PORT (on PORT at any address when ADDR is empty), for at most SECS
# seconds; fails at once when PID, the server, has exited. Servers start
# slowly under qemu's TCG, so a fixed sleep is either too short or wasted.
wait_listen() {
    local addr=$1 port=$2 secs=$3 pid=${4:-} i
    for ((i = 0; i < secs * 5; i++)); do
        ss -ltnH 2>/dev/null | awk -v a="$addr" -v p="$port" '{
            n = split($4, x, ":")
            if (x[n] == p && (a == "" || $4 == a ":" p)) f = 1
        } END { exit !f }' && return 0
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            return 1
        fi
        sleep 0.2
    done
    return 1
}
