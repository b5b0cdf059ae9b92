"""The ``kopt`` command line: solve, tune, validate, predict, model-hash, plugins, specs, data, bench.

This module is the parser (:func:`build_parser`, :func:`main`), the error handling every command shares and
how warnings are shown; each command is its own module (kopt/cli/solve.py, ...; ``kopt data``: data.py,
``kopt bench``: bench/), imported lazily where it is heavy."""
from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings

from ..errors import KoptError, Terminated
from .common import check_extras, data_lines  # kopt.cli names before the split (__all__)
from .model_hash import cmd_model_hash
from .plugins import cmd_plugins
from .predict import cmd_predict
from .solve import cmd_solve, summary
from .specs import cmd_specs_copy, cmd_specs_list, cmd_specs_show
from .tune import cmd_tune
from .validate import cmd_validate

__all__ = ["build_parser", "check_extras", "cmd_model_hash", "cmd_plugins", "cmd_predict", "cmd_solve",
           "cmd_specs_copy", "cmd_specs_list", "cmd_specs_show", "cmd_tune", "cmd_validate", "data_lines",
           "main", "summary"]


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


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (an unknown flag, a bad value, a missing argument) are one line like
    every other error: ``kopt: error: kopt solve: argument --log-every: ...`` and where to read the flags; exit 2."""

    def error(self, message):
        self.exit(2, f"kopt: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser():
    parser = _Parser(prog="kopt", description="Train kernel machines from YAML problem specs.")
    from ..contract.version import __version__

    parser.add_argument("--version", action="version", version=f"kopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
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
    p.add_argument("--proba", action="store_true",
                   help="a classifier's class probabilities too: one column per class, headed by the class name "
                        "(logistic and softmax: their own; a margin loss: the calibration saved in the model)")
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
    q.add_argument("--sides", nargs="+", choices=["spec", "estimator", "svc_c10", "svc", "spec_squared_hinge",
                                                   "spec_square", "svc_c10_other", "svc_other", "svc_grid"],
                   help="the configurations to run (default: the first four; spec_squared_hinge / spec_square: the "
                        "spec naming that loss; svc_c10_other / svc_other: the SVCs on the other scaling (raw or "
                        "z-scored); svc_grid: GridSearchCV(SVC) over C x gamma, 5 x 5, 3 folds)")
    q.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="seconds one run of a side may take before it is killed and reported timed_out (default 3600)")
    q.add_argument("--grid-time-limit", type=float, metavar="SECONDS",
                   help="the same for one run of svc_grid (default 1200): a grid killed at it reports "
                        "fit_s_at_least")
    q.add_argument("--json", metavar="FILE", help="also append the JSON lines to FILE")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.defaults", "defaults")(a))
    q = bsub.add_parser("scale", help="kopt's routes and the large-scale peers from 10^5 rows up on generated data "
                                      "(higgs-shaped, deformed digits), each fit in its own process with a time limit")
    q.add_argument("--sets", nargs="+", metavar="SET", help="higgs-shaped, digits-8v6, digits-10 (default: all)")
    q.add_argument("--rows", nargs="+", type=int, metavar="N",
                   help="training rows (default: 100000 300000 1000000 3000000, and 8000000 when memory allows)")
    q.add_argument("--configs", nargs="+", metavar="CONFIG",
                   help="spec, estimator, joker_rff, falkon, falkon_lean, falkon_hopt, nystroem_sgd, nystroem_ridge, svc (default: all)")
    q.add_argument("--time-limit", type=float, default=1800.0, metavar="S",
                   help="seconds per configuration and size; past it the process is killed and reported timed_out "
                        "(SVC: at most 600)")
    q.add_argument("--out", metavar="FILE", help="append the JSON lines to FILE (and each fit's log to FILE.log)")
    q.add_argument("--plot", metavar="PNG", help="draw test error and fit time against rows from the lines")
    q.add_argument("--plot-only", action="store_true", help="only draw --plot from the lines already in --out")
    q.add_argument("--falkon-sigmas", type=float, nargs="+", metavar="F",
                   help="falkon_lean's bandwidths, as factors of the scale rule's sigma, each its own fit "
                        "(default: 0.5 1 2)")
    q.add_argument("--test-digits", type=int, metavar="N",
                   help="the deformed digits' test set: the last N of the 10,000 mnist digits (default: the preset's "
                        "2,000, of which 389 are 8s and 6s; 5,000 gives 981)")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.scale", "scale")(a))
    q = bsub.add_parser("family", help="kopt's defaults against Falkon, falkon.hopt and SVC on a seeded family of "
                                       "generated tasks: the spread of the ratios (median, worst)")
    q.add_argument("--family", type=int, required=True, metavar="SEED",
                   help="the family's seed (report one no rule was developed on)")
    q.add_argument("--tasks", type=int, default=12, metavar="N", help="tasks of the family (default 12)")
    q.add_argument("--first", type=int, default=0, metavar="I", help="the first task's index (default 0)")
    q.add_argument("--rows", type=int, metavar="N", help="training rows of every task (default: each task's draw)")
    q.add_argument("--max-rows", type=int, metavar="N", help="at most this many training rows a task")
    q.add_argument("--sets", nargs="+", metavar="SET",
                   help="public sets to add as tasks: higgs-12k, ijcnn1, a9a, w8a, cal_housing, reuters, mnist-10k")
    q.add_argument("--configs", nargs="+", metavar="CONFIG",
                   help="kopt, falkon, falkon_hopt, svc (default: all)")
    q.add_argument("--falkon-python", metavar="PATH",
                   help="the Python interpreter Falkon is installed in (without it the Falkon lines are skipped)")
    q.add_argument("--svc-rows", type=int, default=50_000, metavar="N", help="SVC up to this many rows (default 50000)")
    q.add_argument("--time-limit", type=float, default=1800.0, metavar="S",
                   help="seconds per configuration and task; past it the process is killed and reported timed_out")
    q.add_argument("--out", metavar="FILE", help="append the JSON lines to FILE (and each fit's log to FILE.log)")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.family", "family")(a))
    q = bsub.add_parser("tune", help="kopt tune against GridSearchCV(SVC) on mnist-10k and ijcnn1: the same grid size, "
                                     "the same folds, each in its own process")
    q.add_argument("--sets", nargs="+", metavar="SET", help="mnist-10k, ijcnn1 (default: both)")
    q.add_argument("--centers", type=int, metavar="M",
                   help="kopt's Nystrom centers (default per set: 2048 on mnist-10k, 1024 on ijcnn1)")
    q.add_argument("--jobs", type=int, metavar="J", help="GridSearchCV's n_jobs (default: the CPUs available)")
    q.add_argument("--json", metavar="FILE", help="also append the JSON lines to FILE")
    q.set_defaults(func=lambda a: _lazy("kopt.cli.bench.tune", "bench")(a))
    q = bsub.add_parser("joker", help="Joker's seconds per block iteration at Zhang & Lai's HIGGS setting vs its floor")
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
                   help="combine cost and certificate JSON lines into Zhang & Lai's projection (no timing)")
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
