"""Reads one `ktune bench --json` result for run.sh; a failed run is a reason, never an
exception."""
import json
import os


def result(json_path):
    """(measurement dict, None) for a verified, measured run; else (None, one line saying why)."""
    err_path = os.path.splitext(json_path)[0] + ".err"
    stderr = ""
    if os.path.exists(err_path):
        with open(err_path) as f:
            lines = [line.strip() for line in f if line.strip()]
        stderr = lines[-1] if lines else ""
    name = os.path.basename(json_path)
    try:
        with open(json_path) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None, f"{name}: no JSON result ({stderr or 'ktune printed nothing'})"
    if m.get("status", "ok") != "ok":
        return None, f"{name}: {m.get('status')}: {m.get('reason') or stderr}"
    median = m.get("median_ns") or 0
    if median <= 0:
        return None, f"{name}: no sample was measured ({stderr or 'median 0'})"
    return m, None
