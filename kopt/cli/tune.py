"""``kopt tune``: the grid search on validation folds, its table, summary and files (and the refit)."""
from __future__ import annotations

import json
import os

from ..errors import SpecError
from ..files.atomic import writing
from .common import cwd_paths, data_lines

#: kopt.tune's parameters -> the flags of kopt tune that give them
FLAGS = {"folds": "--folds", "validation": "--validation", "metric": "--metric", "grid": "--grid"}


def cmd_tune(args):
    from ..selection import tune_report
    from ..selection.tune import tune
    from ..spec import load_spec
    from ..spec.packaged import resolve_spec_arg

    if args.plot:
        tune_report.check_plot_available()  # before any work
    spec = load_spec(resolve_spec_arg(args.spec), cwd_paths(args.overrides))
    out_dir = args.out or os.path.join("runs", f"{spec['name']}_tune")
    if args.refit:  # the refit's model lands beside the search's files
        spec = load_spec(spec, [f"output.dir={json.dumps(os.path.join(out_dir, 'refit'))}"])
    try:
        with data_lines(args.quiet):
            result = tune(spec, args.grid, folds=args.folds, validation=args.validation, metric=args.metric,
                          warm_start=not args.no_warm_start, progress=not args.quiet)
    except SpecError as exc:  # kopt.tune's parameters are this command's flags
        if exc.parameter in FLAGS:
            raise exc.relabel(f"{FLAGS[exc.parameter]} {exc.value}") from None
        raise
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

