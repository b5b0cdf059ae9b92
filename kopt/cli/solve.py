"""``kopt solve``: a spec solved, its model and report written, the summary printed."""
from __future__ import annotations

import json
import os
import sys

from ..errors import Terminated
from .common import check_extras, cwd_paths, data_lines, flag_override, scheduler_overrides


def _listeners(args, spec):
    """Progress listeners of ``kopt solve``: text lines (unless --quiet) and JSON lines (--log-json)."""
    from ..running.listeners import JsonLog, ProgressBar

    kind, every = args.log_every
    cadence = {"log_every": every if kind == "seconds" else 10.0,
               "log_every_iter": every if kind == "iterations" else None}
    out = []
    if args.log_json:
        stream = sys.stderr if args.log_json == "-" else open(args.log_json, "a", encoding="utf-8")
        out.append(JsonLog(stream, spec_name=spec["name"], **cadence))
    if not args.quiet and args.log_json != "-":
        out.append(ProgressBar(**cadence))
    return out


def cmd_solve(args):
    from ..api import solve
    from ..spec import load_spec
    from ..spec.packaged import resolve_spec_arg

    overrides = cwd_paths(args.overrides)
    if args.out is not None:
        overrides.append(flag_override(f"output.dir={json.dumps(args.out)}", f"--out {args.out or repr(args.out)}"))
    if args.plot:
        overrides.append(flag_override("output.plot=true", "--plot"))
    if args.force:
        overrides.append(flag_override("output.overwrite=true", "--force"))
    overrides += scheduler_overrides(args.scheduler)
    spec = load_spec(resolve_spec_arg(args.spec), overrides)
    check_extras(spec)
    listeners = _listeners(args, spec)
    try:
        with data_lines(args.quiet):
            result = solve(spec, resume=args.resume, progress=listeners or False, write=True,
                           connect_timeout=args.connect_timeout)
    except (KeyboardInterrupt, Terminated) as exc:
        what, status = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
        if spec["output"]["checkpoint_every"]:
            print(f"kopt: {what}; the last checkpoint is in {spec['output']['dir']}. "
                  f"Continue with: kopt solve {args.spec} --resume", file=sys.stderr)
        else:
            print(f"kopt: {what} (no checkpoints: set output.checkpoint_every to make runs resumable)",
                  file=sys.stderr)
        return status
    finally:
        for listener in listeners:
            stream = getattr(listener, "stream", None)
            if stream not in (None, sys.stderr, sys.stdout) and hasattr(stream, "close"):
                stream.close()
    if not args.quiet:
        print(summary(result, spec, verbose=args.verbose))
    return 0


def _budget_words(plan):
    """``work budget 1.2e+13 flops``, with the time limit where one was set (and whether it bound)."""
    budget = plan.get("budget") or {}
    words = f"work budget {budget['work_flops']:.2g} flops" if budget.get("work_flops") else "budget"
    if budget.get("time_limit_s") is not None:
        words += f", time limit {budget['time_limit_s']:g}s" + (
            " (bound: the choice depends on the machine)" if budget.get("machine_dependent") else "")
    return words


def summary(result, spec, verbose=False):
    lines = [f"{spec['name']}: {spec['solver']['name']} finished in {result.timings['fit_s']:.2f}s "
             f"({result.n_iter} iterations{'' if result.success else ', NOT converged: ' + result.message})"]
    if result.objective is not None:
        lines.append(f"  objective {result.objective:.8g}")
    if result.gap is not None:
        rel = result.info.get("rel_gap")
        lines.append(f"  duality gap {result.gap:.3g}" + (f" (relative {rel:.3g})" if rel is not None else ""))
    plan = result.auto
    if plan:
        lines[0] = (f"{spec['name']}: solver auto chose {plan['route']} in {plan['search_s']:.2f}s "
                    f"({_budget_words(plan)}); the solve on every row took {result.timings['fit_s']:.2f}s")
        lines.append(f"  auto: {plan['why']} ({plan['split']})")
    auto = result.lambda_auto
    if auto:
        lines.append(f"  lambda auto: chose {auto['lambda']:g} by validation {auto['metric']} "
                     f"({auto['split']}; {len(auto['path'])} solves in {auto['select_s']:.2f}s"
                     f"{', refit warm-started' if auto['refit_warm'] else ''})")
        lines.append("    " + "  ".join(f"{p['lambda']:g}: {p['score']:.5g}" for p in
                                        sorted(auto["path"], key=lambda p: -p["lambda"])))
    data = result.report.get("data", {})
    if data.get("classes") is not None:
        positive = f" (auc: positive class {_class_name(data['positive_class'])})" if "positive_class" in data else ""
        lines.append(f"  classes {', '.join(str(_class_name(c)) for c in data['classes'])}{positive}")
    for k, v in result.metrics.items():
        lines.append(f"  test {k} {v:.6g}" if v is not None else f"  test {k} undefined (null in report.json)")
    per = result.report.get("metrics_by_class")
    if per:
        lines.append("  test recall by class: " + ", ".join(
            f"{c} {'-' if m['recall'] is None else format(m['recall'], '.4g')} ({m['rows']:,} rows)"
            for c, m in per.items()))
    lines.append(f"  peak memory {result.report['memory']['peak_rss_mb']:.0f} MB")
    from ..numerics import backend

    note = result.report.get("backend_note") or result.report.get("backend")
    fell_back = result.report.get("backend_note") and result.report.get("backend") == "numpy"
    # auto's fall-back to NumPy is news only where a GPU is (nvidia-smi answers) but CuPy cannot use it
    if verbose or (result.report.get("backend_note") and (not fell_back or backend.nvidia_gpu())):
        lines.append(f"  backend: {note}")
    out = spec["output"]
    written = [result.report.get("model_file"), os.path.join(out["dir"], "report.json") if out["report"] else None,
               result.report.get("plot_file")]
    written = [str(w) for w in written if w]
    lines.append(f"  wrote {', '.join(written)}" if written else f"  outputs in {out['dir']}")
    return "\n".join(lines)


def _class_name(c):
    """A class as the summary writes it: a name quoted, a whole number without its '.0'."""
    if isinstance(c, str):
        return repr(c)
    return int(c) if isinstance(c, float) and c.is_integer() else c

