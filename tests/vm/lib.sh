# Sourced by the VM test scripts that run member processes: the table of
# members started in the background (PID, by id), their cleanup on exit,
# and finish, which waits for one with a deadline.
declare -A PID
cleanup() {
    for p in "${PID[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# finish ID SECONDS: wait for member ID to exit within SECONDS; sets RC to
# its status (124 when it had to be killed). Not in a subshell: the member
# must be this shell's child.
finish() {
    local id=$1 limit=$2 t=0
    while kill -0 "${PID[$id]}" 2>/dev/null; do
        if [ "$t" -ge $((limit * 10)) ]; then
            kill -9 "${PID[$id]}" 2>/dev/null
            wait "${PID[$id]}" 2>/dev/null
            unset "PID[$id]"
            RC=124
            return
        fi
        sleep 0.1
        t=$((t + 1))
    done
    RC=0
    wait "${PID[$id]}" || RC=$?
    unset "PID[$id]"
}
