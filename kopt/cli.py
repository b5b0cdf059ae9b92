"""The ``kopt`` command line: solve, validate, predict, plugins, data, bench."""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

from .errors import KoptError


def _add_set(p):
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a spec value (YAML syntax), e.g. --set solver.iterations=100")


def build_parser():
    parser = argparse.ArgumentParser(prog="kopt", description="Train kernel machines from YAML problem specs.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"kopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("solve", help="solve a spec: model, report (and plot) into output.dir")
    p.add_argument("spec")
    _add_set(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    p.add_argument("--plot", action="store_true", help="also write convergence.png")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in output.dir")
    p.add_argument("--out", metavar="DIR", help="output directory (overrides output.dir)")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("validate", help="validate a spec and print the resolved version")
    p.add_argument("spec", nargs="?")
    _add_set(p)
    p.add_argument("--resolved", action="store_true", help="print the spec with defaults filled in")
    p.add_argument("--schema", action="store_true", help="print the composed JSON schema instead")
    p.add_argument("--markdown", action="store_true", help="with --schema: a Markdown reference (docs/spec-reference.md)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("predict", help="score a data file with a saved model")
    p.add_argument("model", help="model.json (or its .npz, or their common stem)")
    p.add_argument("data", help="data file (same layout as the training data)")
    p.add_argument("--out", metavar="FILE", help="write predictions as CSV here (default: stdout)")
    p.add_argument("--format", choices=["auto", "csv", "tsv", "libsvm", "npy", "npz"], help="data format")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("plugins", help="list every registered component and plugin errors")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("data", help="dataset utilities")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION")
    dsub.required = True
    q = dsub.add_parser("fetch", help="download a dataset preset into KOPT_DATA")
    q.add_argument("name")
    q.add_argument("--quiet", "-q", action="store_true")
    q.set_defaults(func=lambda a: _lazy("kopt.data.commands", "fetch")(a))
    q = dsub.add_parser("info", help="rows, columns, labels, missing values, memory of a data file")
    q.add_argument("file")
    q.add_argument("--format", choices=["auto", "csv", "tsv", "libsvm", "npy", "npz"], default="auto")
    q.add_argument("--label", help="label column (index or name)")
    q.set_defaults(func=lambda a: _lazy("kopt.data.commands", "info")(a))

    p = sub.add_parser("bench", help="micro-benchmarks")
    bsub = p.add_subparsers(dest="bench_command", metavar="WHAT")
    bsub.required = True
    q = bsub.add_parser("features", help="random-feature engine throughput vs the cos roofline")
    q.add_argument("--rows", type=int, default=100_000)
    q.add_argument("--dim", type=int, default=28)
    q.add_argument("--features", type=int, nargs="+", default=[4096, 32768])
    q.add_argument("--repeat", type=int, default=3)
    q.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    q.set_defaults(func=lambda a: _lazy("kopt.bench.features", "features")(a))
    q = bsub.add_parser("peers", help="kopt against scikit-learn on the standard splits, each fit in its own process")
    q.add_argument("--sets", nargs="+", metavar="SET", help="higgs-12k, ijcnn1, a9a, cal_housing (default: all)")
    q.add_argument("--repeat", type=int, default=3, help="runs of each side, alternating (the median is reported)")
    q.add_argument("--set-option", action="append", metavar="KEY.PATH=VALUE", help="override kopt's spec (as --set)")
    q.add_argument("--json", metavar="FILE", help="also append the JSON lines to FILE")
    q.set_defaults(func=lambda a: _lazy("kopt.bench.peers", "peers")(a))
    q = bsub.add_parser("joker", help="Joker's seconds per block iteration at papers/004's HIGGS setting vs its floor")
    q.add_argument("--rows", type=int, default=1_000_000)
    q.add_argument("--features", type=int, nargs="+", default=[16384, 100_000])
    q.add_argument("--batch-size", type=int, default=512)
    q.add_argument("--iterations", type=int, default=12)
    q.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    q.set_defaults(func=lambda a: _lazy("kopt.bench.joker", "joker")(a))
    return parser


def _lazy(module, name):
    import importlib

    return getattr(importlib.import_module(module), name)


def cmd_solve(args):
    from .api import solve
    from .spec import load_spec

    overrides = list(args.overrides)
    if args.out:
        overrides.append(f"output.dir={args.out}")
    if args.plot:
        overrides.append("output.plot=true")
    spec = load_spec(args.spec, overrides)
    progress = not args.quiet and sys.stderr.isatty()
    try:
        result = solve(spec, resume=args.resume, progress=progress, write=True)
    except KeyboardInterrupt:
        ck = spec["output"]["checkpoint_every"]
        if ck:
            print(f"kopt: interrupted; the last checkpoint is in {spec['output']['dir']}. "
                  f"Continue with: kopt solve {args.spec} --resume", file=sys.stderr)
        else:
            print("kopt: interrupted (no checkpoints: set output.checkpoint_every to make runs resumable)",
                  file=sys.stderr)
        return 130
    if not args.quiet:
        print(summary(result, spec))
    return 0


def summary(result, spec):
    lines = [f"{spec['name']}: {spec['solver']['name']} finished in {result.timings['fit_s']:.2f}s "
             f"({result.n_iter} iterations{'' if result.success else ', NOT converged: ' + result.message})"]
    if result.objective is not None:
        lines.append(f"  objective {result.objective:.8g}")
    if result.gap is not None:
        lines.append(f"  duality gap {result.gap:.3g}")
    for k, v in result.metrics.items():
        lines.append(f"  test {k} {v:.6g}")
    lines.append(f"  peak memory {result.report['memory']['peak_rss_mb']:.0f} MB")
    note = result.report.get("backend_note")
    if note:
        lines.append(f"  backend: {note}")
    lines.append(f"  outputs in {spec['output']['dir']}")
    return "\n".join(lines)


def cmd_validate(args):
    from .spec import load_spec, resolved_yaml

    if args.schema:
        from .plugins import registry
        from .spec.schema import compose

        if args.markdown:
            from .spec.reference import render_markdown

            sys.stdout.write(render_markdown(registry()))
        else:
            print(json.dumps(compose(registry()), indent=2))
        return 0
    if not args.spec:
        raise KoptError("validate needs a SPEC (or --schema)")
    spec = load_spec(args.spec, args.overrides)
    if args.resolved:
        sys.stdout.write(resolved_yaml(spec))
    else:
        print(f"{args.spec}: valid ({spec['solver']['name']} on {spec['model']['loss']['name']} / "
              f"{spec['model']['kernel']['name']}, form {spec['model']['form']})")
    return 0


def cmd_predict(args):
    import numpy as np

    from .data import read_file
    from .errors import DataError
    from .metrics import evaluate
    from .model import load_model

    model = load_model(args.model)
    opts = dict(model.spec.get("data", {}))
    opts.pop("max_rows", None)
    if args.format:
        opts["format"] = args.format
    opts["n_features"] = model.n_features_in
    X, y = read_file(args.data, opts)
    if X.shape[1] == model.n_features_in - 1 and y is not None:
        X, y = read_file(args.data, {**opts, "label": False})
    if X.shape[1] != model.n_features_in:
        raise DataError(f"{args.data}: {X.shape[1]} features; the model {args.model} was trained on {model.n_features_in}")
    scores = model.decision_function(X)
    pred = model.preprocessor.decode(scores)
    columns = {"prediction": pred}
    if scores.ndim == 1:
        columns["decision"] = scores
    columns.update(model.predict_extra(X))
    _write_predictions(columns, args.out)
    if y is not None:
        metrics = evaluate(model.preprocessor.target, y, scores, model.preprocessor)
        print(", ".join(f"{k} {v:.6g}" for k, v in metrics.items()) + f"  ({len(y)} rows)", file=sys.stderr)
    elif args.out:
        print(f"wrote {len(pred)} predictions to {args.out}", file=sys.stderr)
    return 0


def _write_predictions(columns, out):
    import numpy as np

    from .fileio import atomic_open

    names = list(columns)
    data = np.column_stack([np.asarray(columns[k], dtype=np.float64) for k in names])
    if out:
        with atomic_open(out, "w") as fh:
            np.savetxt(fh, data, delimiter=",", header=",".join(names), comments="", fmt="%.10g")
    else:
        np.savetxt(sys.stdout, data, delimiter=",", header=",".join(names), comments="", fmt="%.10g")


def cmd_plugins(args):
    from .plugins import registry

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
    return 0


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KoptError as exc:
        print(f"kopt: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print("kopt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not a user mistake
        if os.environ.get("KOPT_DEBUG"):
            traceback.print_exc()
        print(f"kopt: internal error: {type(exc).__name__}: {exc}\n"
              "  (this is a bug in kopt or a plugin; set KOPT_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
