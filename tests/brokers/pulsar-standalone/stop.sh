#!/usr/bin/env bash
# Stop the Pulsar standalone started by start.sh WORKDIR: SIGTERM to its process group (start.sh
# runs it under setsid, so the JVM leads its own group), wait up to PULSAR_STOP_TIMEOUT seconds
# (default 30), then SIGKILL. Exit 0 when nothing is left running.
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 WORKDIR" >&2
    exit 2
fi
PIDFILE="$1/pulsar.pid"
TIMEOUT="${PULSAR_STOP_TIMEOUT:-30}"

if [[ ! -f "$PIDFILE" ]]; then
    echo "stop.sh: no $PIDFILE; nothing to stop" >&2
    exit 0
fi
PID="$(cat "$PIDFILE")"
if ! [[ "$PID" =~ ^[0-9]+$ ]] || ! kill -0 "$PID" 2>/dev/null; then
    echo "stop.sh: pid ${PID} not running" >&2
    rm -f "$PIDFILE"
    exit 0
fi

# Signal the group only if the JVM leads it (it does when start.sh launched it).
PGID="$(ps -o pgid= -p "$PID" | tr -d ' ')"
if [[ "$PGID" == "$PID" ]]; then TARGET="-$PID"; else TARGET="$PID"; fi

kill -TERM -- "$TARGET" 2>/dev/null
deadline=$((SECONDS + TIMEOUT))
while kill -0 "$PID" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.5; done
if kill -0 "$PID" 2>/dev/null; then
    echo "stop.sh: pid $PID still alive after ${TIMEOUT}s; SIGKILL" >&2
    kill -KILL -- "$TARGET" 2>/dev/null
    while kill -0 "$PID" 2>/dev/null; do sleep 0.2; done
fi
# Any other member of the group (none expected) goes too.
if [[ "$TARGET" == "-$PID" ]]; then kill -KILL -- "$TARGET" 2>/dev/null; fi
rm -f "$PIDFILE"
echo "stop.sh: stopped pid $PID" >&2
