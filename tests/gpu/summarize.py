"""summary.json of the GPU check (tests/gpu/device_check.sh): the device, the versions, every stage, the figures.

Standard library only, so it still writes a summary when installing kopt or CuPy failed.  Reads the
stage records and the JSON files the stages left in ``--out``; writes ``--out``/summary.json and
prints its headline lines.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET


def _json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _jsonl(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        return []


def versions(dry_run):
    """Python, NumPy, CuPy and the CUDA runtime CuPy sees (each None where it cannot be read)."""
    out = {"python": platform.python_version(), "numpy": None, "cupy": None, "cuda_runtime": None,
           "device": None, "kopt_commit": None}
    try:
        import numpy

        out["numpy"] = numpy.__version__
    except Exception:
        pass
    if not dry_run:
        try:
            from kopt.numerics.backend import cupy_device_info, cupy_status

            ok, reason = cupy_status()
            out["cupy_status"] = reason
            if ok:
                info = cupy_device_info()
                out.update(device=info["device"], cupy=info["cupy"], cuda_runtime=info["cuda_runtime"],
                           cuda_driver_api=info["cuda_driver_api"], compute_capability=info["compute_capability"],
                           memory_gib=info["memory_gib"])
        except Exception as exc:
            out["cupy_status"] = f"{type(exc).__name__}: {exc}"
    try:
        out["kopt_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                            timeout=10).stdout.strip() or None
    except Exception:
        pass
    return out


def junit_counts(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    counts["not_passed"] = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
                            if c.find("failure") is not None or c.find("error") is not None][:50]
    return counts


def figures(out_dir):
    """The headline figures and each target's verdict (None where the stage left no figures)."""
    res = {}
    cmp = _jsonl(os.path.join(out_dir, "compare.jsonl"))
    if cmp:
        res["compare"] = {"cases": len(cmp), "agree": sum(bool(r.get("ok")) for r in cmp),
                          "failed": {r["case"]: r.get("failures") for r in cmp if not r.get("ok")},
                          "objective_rel": {r["case"]: r.get("diffs", {}).get("objective_rel") for r in cmp}}
    feat = _json(os.path.join(out_dir, "bench_features.json"))
    if feat:
        res["features"] = {"roofline": feat.get("roofline"),
                           "by_M": [{k: r.get(k) for k in ("M", "predict", "predict_fraction_of_cos_roofline",
                                                           "predict_fraction_of_engine_floor", "theta_update",
                                                           "fused_predict_adjoint")} for r in feat.get("runs", [])]}
        res["features"]["target_met"] = all((r.get("predict_fraction_of_cos_roofline") or 0) >= 0.5
                                            for r in feat.get("runs", [])) if feat.get("runs") else None
    jk = _json(os.path.join(out_dir, "bench_joker_device.json"))
    if jk:
        rows = [{k: r.get(k) for k in ("M", "seconds_per_iteration", "floor_s", "ratio_to_floor", "paper_run_minutes")}
                for r in jk.get("by_M", [])]
        big = [r for r in rows if r["M"] and r["M"] >= 100_000]
        res["joker"] = {"by_M": rows, "target_met": (all(r["ratio_to_floor"] <= 1.5 and r["paper_run_minutes"] <= 10
                                                         for r in big) if big else None)}
    pcg = _json(os.path.join(out_dir, "bench_pcg_device.json"))
    if pcg:
        res["pcg"] = {"by_config": [{"rows": r.get("rows"), "M": r.get("M"),
                                     "numpy_s_per_iteration": (r.get("numpy") or {}).get("seconds_per_iteration"),
                                     "device_s_per_iteration": (r.get("device") or {}).get("seconds_per_iteration"),
                                     "speedup": r.get("speedup"), "same_model": r.get("same_model")}
                                    for r in pcg.get("runs", [])]}
    return res


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--stages", required=True)
    p.add_argument("--dry-run", default="0")
    p.add_argument("--driver", default="")
    p.add_argument("--cuda-major", default="")
    p.add_argument("--gpu", default="")
    p.add_argument("--seconds", type=int, default=0)
    a = p.parse_args(argv)
    dry = a.dry_run not in ("", "0")
    summary = {"dry_run": dry, "nvidia_smi": {"gpu": a.gpu, "driver": a.driver or None, "cuda": a.cuda_major or None},
               "versions": versions(dry), "seconds": a.seconds, "stages": _jsonl(a.stages),
               "gpu_tests": junit_counts(os.path.join(a.out, "gpu_tests.xml")), **figures(a.out)}
    with open(os.path.join(a.out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2, default=str)
    print(f"summary: {summary['nvidia_smi']['gpu']} driver {a.driver or '?'} CUDA {a.cuda_major or '?'}; "
          f"CuPy {summary['versions']['cupy']}; {a.seconds}s")
    for st in summary["stages"]:
        print(f"  {st['stage']:<10} {st['status']:<9} {st['seconds']:>4}s {st['note']}")
    if summary["gpu_tests"]:
        g = summary["gpu_tests"]
        print(f"  gpu tests: {g['passed']} passed, {g['failures'] + g['errors']} failed, {g['skipped']} skipped")
    if "compare" in summary:
        print(f"  compare: {summary['compare']['agree']} of {summary['compare']['cases']} cases agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
