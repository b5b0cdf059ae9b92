"""The ``kopt`` command line: solve, tune, validate, predict, model-hash, plugins, specs, data, bench."""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import traceback
import warnings

from ..errors import KoptError, Terminated
from ..files.atomic import writing


def _add_set(p):
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a spec value (YAML syntax), e.g. --set solver.iterations=100")


def _connect_timeout(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}")
    return value


def _add_connect_timeout(p):
    p.add_argument("--connect-timeout", metavar="SECONDS", type=_connect_timeout, default=None,
                   help="with --scheduler tcp://...: how long to wait for the scheduler to answer (default 10)")


def build_parser():
    parser = argparse.ArgumentParser(prog="kopt", description="Train kernel machines from YAML problem specs.")
    from ..contract.version import __version__

    parser.add_argument("--version", action="version", version=f"kopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("solve", help="solve a spec: model, report (and plot) into output.dir")
    p.add_argument("spec", help="a spec file, or the name of a packaged spec (kopt specs list)")
    _add_set(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines, warnings or summary")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also say which backend ran and why (without it, auto's fall-back to NumPy is said only "
                        "where a GPU is present)")
    p.add_argument("--plot", action="store_true", help="also write convergence.png (needs matplotlib)")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in output.dir")
    p.add_argument("--out", "-o", metavar="DIR", help="output directory (overrides output.dir)")
    p.add_argument("--force", action="store_true", help="replace a model in output.dir that another spec trained "
                                                        "(output.overwrite: true)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster (pip install 'kopt[dask]'): 'local:N' for N local worker processes, "
                        "or a scheduler address 'tcp://HOST:8786' (sets execution.engine: dask; docs/scale.md)")
    _add_connect_timeout(p)
    p.add_argument("--log-json", metavar="FILE",
                   help="write progress as JSON lines to FILE ('-': stderr, instead of the text lines)")
    p.add_argument("--log-every", metavar="N", default="10s", type=_log_every,
                   help="without a terminal (and for --log-json): a progress line every N seconds ('10s', the "
                        "default) or every N iterations ('500it')")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("tune", help="grid search of lambda, the bandwidth and any numeric key on validation folds")
    p.add_argument("spec", help="a spec file, or the name of a packaged spec (kopt specs list)")
    _add_set(p)
    p.add_argument("--grid", action="append", default=[], metavar="KEY=lo:hi:log:n|KEY=v1,v2",
                   help="a searched key, e.g. model.regularizer.lambda=1e-6:1e-2:log:9 or "
                        "model.kernel.bandwidth_factor=0.5,1,2 (repeatable; default: lambda x 1/100..100 and "
                        "the bandwidth)")
    split = p.add_mutually_exclusive_group()
    split.add_argument("--folds", type=int, metavar="K", help="K seeded folds of the training rows")
    split.add_argument("--validation", type=float, metavar="FRACTION",
                       help="hold out this fraction of the training rows (seeded; the default, 0.2)")
    p.add_argument("--metric", help="accuracy, auc, rmse, mae or r2 (default: accuracy, or rmse for regression)")
    p.add_argument("--no-warm-start", action="store_true", help="solve every lambda from scratch")
    p.add_argument("--refit", action="store_true", help="solve the best spec on all training rows; write its model")
    p.add_argument("--plot", action="store_true", help="also write tune.png, the metric vs lambda (needs matplotlib)")
    p.add_argument("--out", "-o", metavar="DIR", help="where best.yaml, tune.json, tune.png and the refit go "
                                                "(default: runs/NAME_tune)")
    p.add_argument("--quiet", "-q", action="store_true", help="no line per solve")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("validate", help="validate specs (no data is read) and print the resolved version")
    p.add_argument("spec", nargs="*", help="spec files or packaged spec names")
    _add_set(p)
    p.add_argument("--resolved", action="store_true", help="print the spec with defaults filled in")
    p.add_argument("--data", action="store_true",
                   help="also read the data and print the solver's memory plan against the memory available, "
                        "without solving (exit status 2 where it does not fit)")
    p.add_argument("--schema", action="store_true", help="print the composed JSON schema instead")
    p.add_argument("--markdown", action="store_true", help="with --schema: a Markdown reference (docs/spec-reference.md)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="validate for a Dask cluster, as kopt solve --scheduler would run it (no cluster is "
                        "contacted): solvers and options that cannot run distributed are refused")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("predict", help="score a data file with a saved model")
    p.add_argument("model", help="model.json (or its .npz, or their common stem)")
    p.add_argument("data", nargs="+", help="data file (same layout as the training data); with --scheduler, "
                                           "several files or a quoted glob ('parts/*.csv'), one task each")
    p.add_argument("--out", "-o", metavar="FILE", help="write predictions as CSV here (default: stdout); with --scheduler "
                                                 "a folder that gets one CSV per input file")
    p.add_argument("--format", choices=["auto", "csv", "tsv", "libsvm", "npy", "npz"], help="data format")
    p.add_argument("--labels", choices=["auto", "first", "last", "none"], default="auto",
                   help="whether a CSV/TSV/.npy file has a label column: first, last, none, or auto (the default: by "
                        "header name for a model trained on named columns, else by the column count; a count that "
                        "is ambiguous is refused). The rule applied is printed on stderr")
    p.add_argument("--scheduler", metavar="ADDRESS", help="score the files on a Dask cluster ('local:N' or "
                                                          "'tcp://HOST:8786'; pip install 'kopt[dask]')")
    _add_connect_timeout(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("model-hash", help="the content hash of saved models (arrays and what shaped the fit, not "
                                          "timestamps): equal hashes, equal models")
    p.add_argument("models", nargs="+", metavar="MODEL", help="model.json (or its .npz, or their common stem)")
    p.set_defaults(func=cmd_model_hash)

    p = sub.add_parser("plugins", help="list every registered component and plugin errors")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("specs", help="the example specs shipped with kopt: list, show, copy")
    ssub = p.add_subparsers(dest="specs_command", metavar="ACTION")
    ssub.required = True
    q = ssub.add_parser("list", help="every packaged spec, with its data preset and summary")
    q.add_argument("--names", action="store_true", help="names only, one a line (for scripts)")
    q.set_defaults(func=cmd_specs_list)
    q = ssub.add_parser("show", help="print a packaged spec")
    q.add_argument("name")
    q.set_defaults(func=cmd_specs_show)
    q = ssub.add_parser("copy", help="copy packaged specs into a folder to edit them")
    q.add_argument("names", nargs="+", metavar="NAME", help="spec names, or 'all'")
    q.add_argument("dest", metavar="DIR")
    q.set_defaults(func=cmd_specs_copy)

    p = sub.add_parser("data", help="dataset presets and data files")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION")
    dsub.required = True
    q = dsub.add_parser("list", help="every dataset preset, its files and whether they are here")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.data", "list_presets")(a))
    q = dsub.add_parser("fetch", help="download (or verify) dataset presets' files into KOPT_DATA")
    q.add_argument("names", nargs="+", metavar="NAME")
    q.add_argument("--quiet", "-q", action="store_true")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.data", "fetch")(a))
    q = dsub.add_parser("import", help="copy preset files from a folder into KOPT_DATA after checking their "
                                       "SHA-256 (offline machines, CI)")
    q.add_argument("folder", metavar="DIR")
    q.add_argument("names", nargs="*", metavar="NAME", help="only these presets (default: all)")
    q.add_argument("--quiet", "-q", action="store_true")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.data", "import_")(a))
    q = dsub.add_parser("info", help="rows, columns, labels, missing values, memory of a data file")
    q.add_argument("file")
    q.add_argument("--format", choices=["auto", "csv", "tsv", "libsvm", "npy", "npz"], default="auto")
    q.add_argument("--label", help="label column (index or name)")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.data", "info")(a))

    p = sub.add_parser("bench", help="micro-benchmarks")
    bsub = p.add_subparsers(dest="bench_command", metavar="WHAT")
    bsub.required = True
    q = bsub.add_parser("features", help="random-feature engine throughput vs the cos roofline")
    q.add_argument("--rows", type=int, default=100_000)
    q.add_argument("--dim", type=int, default=28)
    q.add_argument("--features", type=int, nargs="+", default=[4096, 32768])
    q.add_argument("--repeat", type=int, default=3)
    q.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.features", "features")(a))
    q = bsub.add_parser("peers", help="kopt against scikit-learn on the standard splits, each fit in its own process")
    q.add_argument("--sets", nargs="+", metavar="SET", help="higgs-12k, ijcnn1, a9a, cal_housing (default: all)")
    q.add_argument("--repeat", type=int, default=3, help="runs of each side, alternating (the median is reported)")
    q.add_argument("--set-option", action="append", metavar="KEY.PATH=VALUE", help="override kopt's spec (as --set)")
    q.add_argument("--json", metavar="FILE", help="also append the JSON lines to FILE")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.peers", "peers")(a))
    q = bsub.add_parser("defaults", help="kopt's defaults (a spec naming only loss and kernel, the estimators with "
                                         "no arguments) against SVC(C=10) and SVC() on every set")
    q.add_argument("--sets", nargs="+", metavar="SET",
                   help="higgs-12k, ijcnn1, a9a, w8a, cal_housing, reuters, mnist-10k (default: all)")
    q.add_argument("--repeat", type=int, default=3, help="runs of each side, alternating (the median is reported)")
    q.add_argument("--sides", nargs="+", choices=["spec", "estimator", "svc_c10", "svc", "spec_squared_hinge"],
                   help="the configurations to run (default: the first four; spec_squared_hinge: the spec naming "
                        "loss squared_hinge, binary sets only)")
    q.add_argument("--json", metavar="FILE", help="also append the JSON lines to FILE")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.defaults", "defaults")(a))
    q = bsub.add_parser("scale", help="kopt's routes and the large-scale peers from 10^5 rows up on generated data "
                                      "(higgs-shaped, deformed digits), each fit in its own process with a time limit")
    q.add_argument("--sets", nargs="+", metavar="SET", help="higgs-shaped, digits-8v6, digits-10 (default: all)")
    q.add_argument("--rows", nargs="+", type=int, metavar="N",
                   help="training rows (default: 100000 300000 1000000 3000000, and 8000000 when memory allows)")
    q.add_argument("--configs", nargs="+", metavar="CONFIG",
                   help="spec, estimator, joker_rff, falkon, nystroem_sgd, nystroem_ridge, svc (default: all)")
    q.add_argument("--time-limit", type=float, default=1800.0, metavar="S",
                   help="seconds per configuration and size; past it the process is killed and reported timed_out "
                        "(SVC: at most 600)")
    q.add_argument("--out", metavar="FILE", help="append the JSON lines to FILE")
    q.add_argument("--plot", metavar="PNG", help="draw test error and fit time against rows from the lines")
    q.add_argument("--plot-only", action="store_true", help="only draw --plot from the lines already in --out")
    q.add_argument("--test-digits", type=int, metavar="N",
                   help="the deformed digits' test set: the last N of the 10,000 mnist digits (default: the preset's "
                        "2,000, of which 389 are 8s and 6s; 5,000 gives 981)")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.scale", "scale")(a))
    q = bsub.add_parser("tune", help="kopt tune against GridSearchCV(SVC) on mnist-10k and ijcnn1: the same grid size, "
                                     "the same folds, each in its own process")
    q.add_argument("--sets", nargs="+", metavar="SET", help="mnist-10k, ijcnn1 (default: both)")
    q.add_argument("--centers", type=int, metavar="M",
                   help="kopt's Nystrom centres (default per set: 2048 on mnist-10k, 1024 on ijcnn1)")
    q.add_argument("--jobs", type=int, metavar="J", help="GridSearchCV's n_jobs (default: the CPUs available)")
    q.add_argument("--json", metavar="FILE", help="also append the JSON lines to FILE")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.tune", "bench")(a))
    q = bsub.add_parser("joker", help="Joker's seconds per block iteration at papers/004's HIGGS setting vs its floor")
    q.add_argument("--rows", type=int, default=1_000_000)
    q.add_argument("--features", type=int, nargs="+", default=[16384, 100_000])
    q.add_argument("--batch-size", type=int, default=None,
                   help="time today's GEMM iteration at this |B| instead of the variants")
    q.add_argument("--iterations", type=int, default=12)
    q.add_argument("--variants", nargs="+", metavar="V",
                   help="today, syrk-512, syrk-256, syrk-128, syrk-64 (|B| and how K_BB is formed)")
    q.add_argument("--certificate", action="store_true",
                   help="time to a certificate: each variant's relative gap per epoch on --rows rows at M = --features")
    q.add_argument("--epochs", type=float, default=3.0)
    q.add_argument("--checks", type=int, default=4, help="gap estimates per epoch (--certificate)")
    q.add_argument("--check-rows", type=int, default=100_000)
    q.add_argument("--project", nargs="+", metavar="FILE",
                   help="combine cost and certificate JSON lines into papers/004's projection (no timing)")
    q.add_argument("--json", metavar="FILE", help="also append the figures as JSON lines")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.joker", "joker")(a))
    return parser


def _lazy(module, name):
    import importlib

    return getattr(importlib.import_module(module), name)


def _log_every(text):
    t = text.strip().lower()
    try:
        if t.endswith("it"):
            n = int(t[:-2])
            if n < 1:
                raise ValueError
            return ("iterations", n)
        v = float(t[:-1] if t.endswith("s") else t)
        if v <= 0:
            raise ValueError
        return ("seconds", v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds ('10s') or iterations ('500it'), got {text!r}") from None


def _cwd_paths(overrides):
    """``--set data.train=FILE`` / ``data.test=FILE`` with a relative path mean a file in the current folder
    (a spec file's own paths are relative to the spec, which for a packaged spec is inside the package)."""
    import yaml

    out = []
    for item in overrides:
        key, sep, raw = item.partition("=")
        if sep and key.strip() in ("data.train", "data.test"):
            try:
                value = yaml.safe_load(raw)
            except yaml.YAMLError:
                value = None

            def fix(v):
                if isinstance(v, str) and v and not v.startswith(("$", "~")) and not os.path.isabs(v):
                    return os.path.abspath(v)
                return v

            if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                fixed = [fix(v) for v in value] if isinstance(value, list) else fix(value)
                item = f"{key}={json.dumps(fixed)}"
        out.append(item)
    return out


def check_extras(spec):
    """Optional dependencies a valid spec needs: output.plot needs matplotlib (the ``plot`` extra)."""
    import importlib.util

    if spec["output"].get("plot") and importlib.util.find_spec("matplotlib") is None:
        raise spec.error(("output", "plot"), "plot is true but matplotlib is not installed; install the plot extra "
                         "(pip install 'kopt[plot]') or set output.plot: false (--set output.plot=false)")


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


def _scheduler_overrides(scheduler):
    """``--set`` items that run a spec on the Dask cluster ``scheduler`` (none without one)."""
    if not scheduler:
        return []
    return ["execution.engine=dask", f"execution.scheduler={json.dumps(scheduler)}"]


def cmd_solve(args):
    from ..api import solve
    from ..spec import load_spec
    from ..spec.packaged import resolve_spec_arg

    overrides = _cwd_paths(args.overrides)
    if args.out:
        overrides.append(f"output.dir={args.out}")
    if args.plot:
        overrides.append("output.plot=true")
    if args.force:
        overrides.append("output.overwrite=true")
    overrides += _scheduler_overrides(args.scheduler)
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


@contextlib.contextmanager
def data_lines(quiet):
    """The data reader's notes (which column is the label, when found by its header name) on stderr as
    ``kopt: ...`` lines while a command reads its data; none with --quiet."""
    if quiet:
        yield
        return
    logger = logging.getLogger("kopt.data")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kopt: %(message)s"))
    handler.setLevel(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def cmd_tune(args):
    from ..selection import tune_report
    from ..spec import load_spec
    from ..spec.packaged import resolve_spec_arg
    from ..selection.tune import tune

    if args.plot:
        tune_report.check_plot_available()  # before any work
    spec = load_spec(resolve_spec_arg(args.spec), _cwd_paths(args.overrides))
    out_dir = args.out or os.path.join("runs", f"{spec['name']}_tune")
    if args.refit:  # the refit's model lands beside the search's files
        spec = load_spec(spec, [f"output.dir={json.dumps(os.path.join(out_dir, 'refit'))}"])
    with data_lines(args.quiet):
        result = tune(spec, args.grid, folds=args.folds, validation=args.validation, metric=args.metric,
                      warm_start=not args.no_warm_start, progress=not args.quiet)
    print(tune_report.table(result))
    if args.refit:
        from ..api import solve

        result.refit = solve(result.best_spec, write=True)
    print(tune_report.summary(result))
    with writing(out_dir, "the search's results"):
        paths = tune_report.write(result, out_dir, with_plot=args.plot)
    if args.refit:
        paths["model"] = os.path.join(result.best_spec["output"]["dir"], "model.json")
    print("wrote " + ", ".join(paths.values()))
    return 0


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
                    f"(budget {plan['budget_s']:g}s); the solve on every row took {result.timings['fit_s']:.2f}s")
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


def cmd_validate(args):
    from ..spec import load_spec, resolved_yaml

    if args.schema:
        from ..contract.registry import registry
        from ..spec.schema import compose

        if args.markdown:
            from ..spec.reference import render_markdown

            sys.stdout.write(render_markdown(registry()))
        else:
            print(json.dumps(compose(registry()), indent=2))
        return 0
    if not args.spec:
        raise KoptError("validate needs a SPEC (or --schema)")
    from ..spec.packaged import resolve_spec_arg

    failed = 0

    def attempt(work):
        """``work()``, or None after reporting its error (one SPEC: raised; several: each reported, the worst
        exit status kept)."""
        nonlocal failed
        try:
            return work()
        except KoptError as exc:
            if len(args.spec) == 1:
                raise
            print(f"kopt: error: {exc}", file=sys.stderr)
            failed = max(failed, exc.exit_status)
            return None

    def loaded(arg):
        spec = load_spec(resolve_spec_arg(arg), _cwd_paths(args.overrides) + _scheduler_overrides(args.scheduler))
        check_extras(spec)
        return spec

    for arg in args.spec:
        spec = attempt(lambda: loaded(arg))
        if spec is None:
            continue
        if args.resolved:
            sys.stdout.write(resolved_yaml(spec))
        else:
            data = spec["data"].get("source") or "files"
            print(f"{arg}: valid ({spec['solver']['name']} on {spec['model']['loss']['name']} / "
                  f"{spec['model']['kernel']['name']}, form {spec['model']['form']}, data {data})")
        if args.data and attempt(lambda: _print_memory_plan(spec)) is False:
            failed = max(failed, 2)
    return failed


def _print_memory_plan(spec) -> bool:
    """``kopt validate --data``: read and prepare the spec's data, print its solver's memory plan (:mod:`kopt.numerics.memory`)
    against the memory available; False where it does not fit (its refusal is printed as kopt solve would)."""
    from ..numerics import memory
    from ..running.assemble import assemble
    from ..contract.registry import registry

    with memory.out_of_memory(f"reading and preparing the data of {spec.get('name') or 'the spec'}"):
        problem = assemble(spec)
    solver = registry().get("solver", spec["solver"]["name"])(
        **{k: v for k, v in spec["solver"].items() if k != "name"})
    sizes = solver.memory_sizes(problem)
    have = memory.available_bytes()
    if solver.plans and solver.memory_key in memory.KEYS:  # a planning solver caps its own search to what fits
        field = memory.KEYS[solver.memory_key]
        most = memory.largest_fitting(solver, sizes, have, field)
        if 0 < most < getattr(sizes, field):
            print(f"solver {solver.name} tries at most {most:,} (the most its plan fits in the memory available)")
            sizes = sizes.replace(**{field: most})
    print("\n".join(memory.plan_lines(solver, sizes, have)))
    plan = memory.plan_of(solver, sizes)
    if plan and memory.total(plan) > have:
        print(f"kopt: error: {memory.refusal(solver, sizes, plan, have)}", file=sys.stderr)
        return False
    return True


def cmd_specs_list(args):
    from ..spec import packaged as specfiles

    d = specfiles.specs_dir()
    if d is None:
        raise KoptError("no packaged specs found (a broken installation?)")
    names = specfiles.names()
    if args.names:
        print("\n".join(names))
        return 0
    rows = [(n, specfiles.data_source(d / f"{n}.yaml") or "-", specfiles.summary(d / f"{n}.yaml")) for n in names]
    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    print(f"{'SPEC'.ljust(w0)}  {'DATA'.ljust(w1)}  SUMMARY")
    for n, src, text in rows:
        print(f"{n.ljust(w0)}  {src.ljust(w1)}  {text[:100]}")
    print(f"\n{len(rows)} specs in {d}; run one with: kopt solve NAME")
    return 0


def cmd_specs_show(args):
    from ..spec import packaged as specfiles

    sys.stdout.write(specfiles.path_of(args.name).read_text(encoding="utf-8"))
    return 0


def cmd_specs_copy(args):
    from ..spec import packaged as specfiles

    names = specfiles.names() if args.names == ["all"] else args.names
    for name in names:
        print(f"wrote {specfiles.copy(name, args.dest)}")
    return 0


def cmd_predict(args):
    from ..numerics.memory import out_of_memory
    from ..models.model import load_model
    from ..models.predict_file import predict_file

    model = load_model(args.model)
    opts = _predict_options(model, args.format)
    if args.scheduler:
        if args.labels != "auto":
            raise KoptError("kopt predict --scheduler reads each file's label column by --labels auto")
        return _predict_partitioned(args, model, opts)
    if len(args.data) != 1:
        raise KoptError(f"kopt predict scores one data file; got {len(args.data)} (several files or a glob are "
                        "scored on a Dask cluster: add --scheduler and --out DIR)")
    with writing(os.path.dirname(os.path.abspath(args.out)) if args.out else "standard output", "the predictions"), \
            out_of_memory(f"scoring {args.data[0]} with the model {args.model}"):
        rows, metrics = predict_file(model, args.data[0], opts, args.out, model_name=f"the model {args.model}",
                                     labels=args.labels, say=lambda line: print(f"kopt: {line}", file=sys.stderr))
    if metrics is not None:
        print(", ".join(f"{k} {v:.6g}" for k, v in metrics.items()) + f"  ({rows} rows)", file=sys.stderr)
    elif args.out:
        print(f"wrote {rows} predictions to {args.out}", file=sys.stderr)
    return 0


def _predict_options(model, fmt):
    """The parse options of the model's training data (its preset's, a --format) for new files."""
    opts = dict(model.spec.get("data", {}))
    opts.pop("max_rows", None)
    # a preset's header flag describes the preset's files; a new file's header is detected, as kopt solve does
    opts.update({k: v for k, v in _preset_read_options(opts).items() if k != "header"})
    opts["header"] = opts.get("header") if not opts.get("source") else "auto"
    if fmt:
        opts["format"] = fmt
    opts["n_features"] = model.n_features_in
    return opts


def _predict_partitioned(args, model, opts):
    """Several files (or a glob) scored on a Dask cluster, one output file per input file in ``--out``."""
    import numpy as np

    from ..distributed.cluster import Cluster
    from ..distributed.predict import expand, predict_files
    from ..numerics.metrics import evaluate

    if not args.out:
        raise KoptError("kopt predict --scheduler writes one file per input file: give the folder with --out DIR")
    files = expand(args.data)
    with Cluster(args.scheduler, connect_timeout=args.connect_timeout) as cluster:
        done = predict_files(cluster.client, os.path.abspath(args.model), files, args.out, opts)
    rows = sum(d[1] for d in done)
    print(f"wrote {rows} predictions to {len(done)} files in {args.out}", file=sys.stderr)
    if all(d[2] is not None for d in done):
        y = np.concatenate([d[2] for d in done])
        scores = np.concatenate([d[3] for d in done], axis=0)
        metrics = evaluate(model.preprocessor.target, y, scores, model.preprocessor)
        print(", ".join(f"{k} {v:.6g}" for k, v in metrics.items()) + f"  ({len(y)} rows)", file=sys.stderr)
    return 0


def cmd_model_hash(args):
    from ..models.model import content_hash, read_model_files

    for path in args.models:
        meta, arrays, _ = read_model_files(path)
        print(f"{content_hash(meta, arrays)}  {path}")
    return 0


def _preset_read_options(data):
    """The parse options of the preset a model was trained on (label column, format, n_features)."""
    if not data.get("source"):
        return {}
    from ..data.presets import FilePreset
    from ..contract.registry import registry

    try:
        cls = registry().get("dataset", data["source"])
    except KoptError:
        return {}
    return dict(cls.read) if issubclass(cls, FilePreset) else {}


def cmd_plugins(args):
    from ..contract.registry import registry

    reg = registry()
    rows = [("KIND", "NAME", "ORIGIN", "PLUGIN", "SUPPORTS")]
    for kind in ("loss", "kernel", "regularizer", "solver", "dataset", "predictor"):
        for name in reg.names(kind):
            e = reg.components[kind][name]
            origin = f"{e.distribution} {e.version}".strip()
            supports = e.cls.supports() if kind != "predictor" else ""
            rows.append((kind, name, origin, e.plugin, supports))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    if reg.errors:
        print("\nplugins that failed to load:")
        for e in reg.errors:
            print(f"  {e}")
    if reg.empty:
        print("\nplugins that registered nothing (their hooks are module-level functions decorated with "
              "kopt.contract.hookspecs.hookimpl, in the module the entry point names):")
        for text in reg.empty:
            print(f"  {text}")
    return 0


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """kopt's own warnings as one clean line (no source path); others as Python prints them."""
    from ..errors import ConvergenceWarning, SpecWarning

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the kopt package
    ours = issubclass(category, (ConvergenceWarning, SpecWarning)) or os.path.abspath(filename).startswith(here) or (
        "kopt_plugins" in filename)
    stream = file or sys.stderr
    if ours:
        text = " ".join(str(message).split())
        if issubclass(category, ConvergenceWarning) and ": " in text:
            solver, _, why = text.partition(": ")
            text = f"{solver} {why}" if why.startswith("stopped") else f"{solver} stopped before converging: {why}"
        stream.write(f"kopt: warning: {text}\n")
    else:
        stream.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():  # restores the filters and showwarning afterwards
        warnings.showwarning = _show_warning
        from ..errors import ConvergenceWarning, SpecWarning

        warnings.filterwarnings("always", category=SpecWarning)  # every spec validated says it
        if getattr(args, "quiet", False) and getattr(args, "command", None) == "solve":
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            warnings.filterwarnings("ignore", category=SpecWarning)
        return _run(args)


def _run(args):
    from ..running.context import sigterm_raises

    try:
        with sigterm_raises():
            return args.func(args)
    except KoptError as exc:
        print(f"kopt: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print("kopt: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("kopt: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except BrokenPipeError:
        return 0
    except MemoryError as exc:  # out of memory is the machine's limit met, not a bug: the user can act on it
        from ..numerics.memory import out_of_memory_message

        text = exc if isinstance(exc, KoptError) else out_of_memory_message(f"running kopt {args.command}", exc)
        print(f"kopt: error: {text}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug, not a user mistake
        if os.environ.get("KOPT_DEBUG"):
            traceback.print_exc()
        print(f"kopt: internal error: {type(exc).__name__}: {exc}\n"
              "  (this is a bug in kopt or a plugin; set KOPT_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
