#!/usr/bin/env bash
# BAT's CAFF specs (tests/fixtures/bat) as a new user tries them, on the GPU machine (issue 45):
# every well-formed one dry-runs and tunes briefly; pnpoly's (arguments that disagree with its
# kernel) and the malformed ones are refused in one line.
#   bat.sh BUILD_OR_BUNDLE_DIR OUT_DIR   (KTUNE_BAT_BUDGET, default 12; KTUNE_BAT_TIME, default 25 s)
# Writes bat.txt (the summary, printed last) and one session folder per spec under OUT_DIR.
set -uo pipefail
bundle=$1; out=$2
bin=$bundle/bin/ktune; [ -x "$bin" ] || bin=$bundle/src/cli/ktune
root=$(cd "$(dirname "$0")/../.." && pwd); bat=$root/tests/fixtures/bat
budget=${KTUNE_BAT_BUDGET:-12}; limit=${KTUNE_BAT_TIME:-25}
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-bat.XXXXXX)}
mkdir -p "$out"; summary=$out/bat.txt; : >"$summary"
echo "| spec | dry run | tune | evaluations | statuses | best us | evaluations/s | first failure |" >>"$summary"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |" >>"$summary"
for spec in "$bat"/*-CAFF.json; do
  name=$(basename "$spec" -CAFF.json)
  "$bin" tune "$spec" --dry-run >"$out/dry-$name.txt" 2>&1
  dry=$?
  if [ "$dry" != 0 ]; then
    # Refused: the one line that says why.
    why=$(grep -v '^note:' "$out/dry-$name.txt" | grep -E 'ktune:|problem:' | head -n 1 | cut -c1-160)
    echo "| $name | refused (exit $dry) | - | - | - | - | - | ${why//|/\/} |" >>"$summary"
    continue
  fi
  d=$out/session-$name; rm -rf "$d"
  timeout $((limit + 120)) "$bin" --db "$KTUNE_HOME/ktune.db" tune "$spec" --budget "$budget" \
    --time "$limit" -o "$d" >"$d.stdout" 2>"$d.stderr"
  rc=$?
  python3 - "$d" "$name" "$rc" >>"$summary" <<'PY'
import json, sys
d, name, rc = sys.argv[1:4]
try:
    s = json.load(open(d + "/summary.json"))
except Exception:
    err = [l for l in open(d + ".stderr", errors="replace").read().splitlines() if l.strip()]
    why = (err[-1] if err else "")[:160].replace("|", "/")
    print(f"| {name} | ok | exit {rc}, no summary | - | - | - | - | {why} |"); sys.exit()
first = ""
try:
    for line in open(d + "/results.jsonl"):
        r = json.loads(line)
        if r["status"] not in ("ok", "slower"):
            first = (r["status"] + ": " + r.get("detail", ""))[:160].replace("|", "/"); break
except OSError:
    pass
b = s["best"]
statuses = ", ".join(f"{v} {k}" for k, v in s["status_counts"].items() if v)
print(f"| {name} | ok | exit {rc} | {s['evaluations']} | {statuses} | "
      f"{b['time_ns'] / 1e3:.2f} | {s['evaluations_per_s']:.2f} | {first} |" if b else
      f"| {name} | ok | exit {rc} | {s['evaluations']} | {statuses} | none | "
      f"{s['evaluations_per_s']:.2f} | {first} |")
PY
done
tuned=$(grep -c '| ok | exit 0 |' "$summary")
clean=$(grep '| ok | exit 0 |' "$summary" | grep -vc 'launch_failed\|compile_failed\|validation')
echo "$tuned well-formed specs tuned (exit 0), $clean of them with no launch, compile or validation failure" >>"$summary"
# Everything but the summary in one archive, so the folder stays a few files.
(cd "$out" && find . -mindepth 1 -maxdepth 1 ! -name bat.txt ! -name details.tar.gz -printf '%P\n' |
  tar -czf details.tar.gz -T - --remove-files)
cat "$summary"
