"""``kopt predict``: a data file scored with a saved model (several files on a Dask cluster)."""
from __future__ import annotations

import os
import sys

from ..errors import KoptError
from ..files.atomic import writing


def cmd_predict(args):
    from ..models.model import load_model
    from ..models.predict_file import predict_file
    from ..numerics.memory import out_of_memory

    model = load_model(args.model)
    opts = _predict_options(model, args.format)
    if args.scheduler:
        if getattr(args, "proba", False):
            raise KoptError("kopt predict --proba scores one file here; it is not supported with --scheduler yet")
        if args.labels != "auto":
            raise KoptError("kopt predict --scheduler reads each file's label column by --labels auto")
        return _predict_partitioned(args, model, opts)
    if len(args.data) != 1:
        raise KoptError(f"kopt predict scores one data file; got {len(args.data)} (several files or a glob are "
                        "scored on a Dask cluster: add --scheduler and --out DIR)")
    with writing(os.path.dirname(os.path.abspath(args.out)) if args.out else "standard output", "the predictions"), \
            out_of_memory(f"scoring {args.data[0]} with the model {args.model}"):
        rows, metrics = predict_file(model, args.data[0], opts, args.out, model_name=f"the model {args.model}",
                                     labels=args.labels, say=lambda line: print(f"kopt: {line}", file=sys.stderr),
                                     proba=args.proba)
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


def _preset_read_options(data):
    """The parse options of the preset a model was trained on (label column, format, n_features)."""
    if not data.get("source"):
        return {}
    from ..contract.registry import registry
    from ..data.presets import FilePreset

    try:
        cls = registry().get("dataset", data["source"])
    except KoptError:
        return {}
    return dict(cls.read) if issubclass(cls, FilePreset) else {}

