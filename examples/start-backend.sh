#!/bin/sh
# Starts a service's backend outside the service's process tree and waits until it listens.
# usage: start-backend.sh PORT PARENT_PID COMMAND...
#   runs `COMMAND... PORT PARENT_PID` in a detached session (so keisoku watches and profiles
#   the service alone, as with a real external service; the backend exits when PARENT_PID
#   does) and returns once 127.0.0.1:PORT accepts connections, so the service never
#   announces itself before its backend answers.
set -eu
PORT=${1:?usage: start-backend.sh PORT PARENT_PID COMMAND...}
PARENT=${2:?parent pid}
shift 2
(setsid "$@" "$PORT" "$PARENT" > /dev/null 2>&1 &)
python3 -c 'import socket, sys, time
port = int(sys.argv[1])
for _ in range(150):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("backend did not listen on %d within 15 s" % port)' "$PORT"
