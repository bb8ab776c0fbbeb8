#!/usr/bin/env bash
# Runs a command and ties its life to our stdin: when the test process that
# started us goes away in any way (a failed test, Ctrl-C, a crash, SIGKILL),
# the pipe closes and the command is stopped, so no apiserver or etcd is left
# behind. Closing stdin on purpose is also how a test stops it.
exec 3<&0 </dev/null
"$@" &
pid=$!
(
  read -r _ <&3 || true
  kill -TERM "$pid" 2>/dev/null || exit 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
) &
watchdog=$!
wait "$pid"
status=$?
kill "$watchdog" 2>/dev/null
exit "$status"
