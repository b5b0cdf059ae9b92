"""``kopt predict MODEL 'DATA*' --scheduler ... --out DIR``: one worker task per data file, one output file each.

Each task reads its file, scores it with the model (standardisation included: the same
:meth:`kopt.models.model.Model.decision_function` as on one machine) and writes ``DIR/<file stem>.csv`` with the
columns of a single-machine ``kopt predict``; only the file names and row counts (and, for labelled
files, the labels and scores the metrics need) come back to the client.
"""
from __future__ import annotations

import glob
import os

from ..errors import DataError


def expand(patterns) -> list:
    """The files a list of paths and glob patterns names, sorted within each pattern."""
    files = []
    for p in patterns:
        hits = sorted(glob.glob(p)) if any(c in p for c in "*?[") else [p]
        if not hits:
            raise DataError(f"{p}: no file matches")
        files.extend(hits)
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise DataError(f"{missing[0]}: data file not found")
    return files


def predict_files(client, model_path, files, out_dir, opts):
    """Score ``files`` on the cluster; returns ``[(file, rows, labels or None, scores)]`` in file order."""
    os.makedirs(out_dir, exist_ok=True)
    futures = [client.submit(_predict_one, model_path, f, _target(out_dir, f), opts, pure=False) for f in files]
    return client.gather(futures)


def _target(out_dir, path):
    name = os.path.basename(path)
    for ext in (".gz", ".bz2", ".xz"):
        name = name[: -len(ext)] if name.endswith(ext) else name
    return os.path.join(out_dir, os.path.splitext(name)[0] + ".csv")


def _predict_one(model_path, path, target, opts):
    """Runs on a worker: score one file block by block (:func:`kopt.models.predict_file.score_file`) into ``target``."""
    from ..models.model import load_model
    from ..models.predict_file import score_file

    rows, y, scores = score_file(load_model(model_path), path, opts, target, model_name=f"the model {model_path}")
    return target, rows, y, scores
