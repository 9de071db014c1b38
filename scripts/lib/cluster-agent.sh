# scripts/lib/cluster-agent.sh DIR DEV - the guest side of softroce-cluster's
# link impairments: netem on both directions of one member's NIC.
#
# The host has no netem, so loss, delay, reordering and duplication are
# applied inside the member's own kernel: egress on DEV directly, ingress
# through an ifb device that DEV's ingress traffic is redirected to. The
# agent polls DIR/netem.cmd ("SEQ ARGS...", written by `softroce-cluster
# fault CTL netem I ARGS...`); a new SEQ replaces whatever was applied
# before with `netem ARGS` both ways ("clear" removes it) and answers in
# DIR/netem.done ("SEQ STATUS MESSAGE"). Idle, it forks nothing: its
# sleep is a read with a timeout on a FIFO nobody writes.
dir=$1
dev=${2:-eth0}
last=
fifo=/run/cluster-agent.$$
mkfifo "$fifo" && exec 3<>"$fifo" && rm -f "$fifo"

apply() {
    tc qdisc del dev "$dev" root 2>/dev/null
    tc qdisc del dev "$dev" ingress 2>/dev/null
    ip link del ifb0 2>/dev/null
    [ "$*" = clear ] && return 0
    ip link add ifb0 type ifb && ip link set ifb0 up &&
        tc qdisc add dev "$dev" root netem "$@" &&
        tc qdisc add dev "$dev" handle ffff: ingress &&
        tc filter add dev "$dev" parent ffff: matchall action mirred egress redirect dev ifb0 &&
        tc qdisc add dev ifb0 root netem "$@"
}

while :; do
    if [ -e "$dir/netem.cmd" ] && read -r seq args <"$dir/netem.cmd" && [ -n "$seq" ] && [ "$seq" != "$last" ]; then
        last=$seq
        # shellcheck disable=SC2086
        out=$(apply $args 2>&1)
        rc=$?
        echo "$seq $rc $(echo $out)" >"$dir/netem.done.new" && mv -f "$dir/netem.done.new" "$dir/netem.done"
    fi
    read -r -t 0.25 -u 3 _ || true
done
