"""What the side-by-side benchmarks share: a child process per run, its peak memory, medians."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np


def peak_mb() -> float:
    """This process's peak resident memory in MiB (:func:`kopt.numerics.memory.peak_rss_mb`: right on every OS)."""
    from ...numerics.memory import peak_rss_mb

    return peak_rss_mb()


def child(module: str, args: list, timeout: float) -> dict:
    """Run ``python -m module *args`` and read the JSON object its last stdout line holds (or an error).  A child
    still running after ``timeout`` seconds is killed: ``{"error": ..., "timed_out": True, "time_limit_s": timeout}``
    (its fit took longer than that, a bound the bench reports)."""
    try:
        proc = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"killed after its time limit of {timeout:g} s", "timed_out": True,
                "time_limit_s": float(timeout)}
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median(runs, key):
    vals = [r[key] for r in runs if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
    return float(np.median(vals)) if vals else None


def summarize(runs) -> dict:
    """The medians of a side's runs (numbers), with every run's fit, predict and memory figures kept."""
    if not runs or all("error" in r for r in runs):
        out = {"error": runs[0].get("error") if runs else "no run"}
        if runs and all(r.get("timed_out") for r in runs):  # every run past its limit: the fit took at least that
            out.update(timed_out=True, fit_s_at_least=min(r["time_limit_s"] for r in runs))
        return out
    ok = [r for r in runs if "error" not in r]
    out = {"config": ok[0]["config"]}
    for key in ok[0]:
        if key != "config" and isinstance(ok[0][key], (int, float)) and not isinstance(ok[0][key], bool):
            out[key] = median(ok, key)
    for key in ("fit_s", "predict_s", "peak_mb"):
        if key in ok[0]:
            out[key + "_all"] = [round(r[key], 4) for r in ok]
    if "success" in ok[0]:
        out["success"] = all(r["success"] for r in ok)
    for key, value in ok[0].items():  # descriptions (the route chosen ...) from the first run
        if isinstance(value, str) and key not in out:
            out[key] = value
    return out


def chosen_sets(names, known) -> list:
    """The sets a bench runs: ``names`` (all of ``known`` when empty), each one of ``known``."""
    names = list(names or known)
    unknown = [n for n in names if n not in known]
    if unknown:
        from ...errors import KoptError

        raise KoptError(f"unknown benchmark set {', '.join(unknown)}; sets: {', '.join(known)}")
    return names


def emit(line: dict, json_path=None):
    """Print one bench line as JSON, and append it to ``json_path`` when given."""
    from ...files.atomic import dumps

    print(dumps(line), flush=True)
    if json_path:
        with open(json_path, "a", encoding="utf-8") as fh:
            fh.write(dumps(line) + "\n")
