#!/usr/bin/env bash
# Regenerates the expected outputs of crates/logs/tests/fixtures with real
# alp v1.0.21, so the offline comparison tests check against alp itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/build.sh" >/dev/null
alp="$here/../tools/alp"
fx="$here/../../crates/logs/tests/fixtures"
mkdir -p "$fx/expected"
python3 - "$alp" "$fx" <<'PY'
import json, subprocess, sys
alp, fx = sys.argv[1], sys.argv[2]
for c in json.load(open(f"{fx}/cases.json")):
    out = subprocess.run([alp, c["cmd"], "--file", f"{fx}/{c['file']}", *c["args"]],
                         capture_output=True, check=True).stdout
    open(f"{fx}/expected/{c['name']}.out", "wb").write(out)
    print(c["name"], len(out))
PY
