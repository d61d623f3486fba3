# Sourced by bench/run.sh and bench/memrestart.sh (bash): restarts the
# controller of the cluster in $STATE and times it.
#
#   restart_ctld PID
#
# SIGTERMs the controller PID, waits for it to exit, starts `$MUSTER ctld`
# again on $CONF (logging to $STATE/log/ctld.log, recorded in $STATE/pids)
# and waits for `$MB ping`'s answer. Sets t0 (the start time), newpid and
# line (ping's answer, or "failed"); `since_t0 T` gives T - t0 in seconds.
restart_ctld() {
    local pid=$1 i
    kill -TERM "$pid"
    for ((i = 0; i < 1000; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
    t0=$(date +%s.%N)
    "$MUSTER" ctld -f "$CONF" >>"$STATE/log/ctld.log" 2>&1 &
    newpid=$!
    sed -i "s/^$pid ctld\$/$newpid ctld/" "$STATE/pids"
    line=$("$MB" ping -f "$CONF" --timeout 120) || line=failed
}

since_t0() { [[ $1 =~ ^[0-9.]+$ ]] && echo "scale=3; ($1 - $t0) / 1" | bc; }
