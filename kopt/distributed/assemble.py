"""The Dask row source of :func:`kopt.running.assemble.assemble`: statistics from partition pieces, the same Problem.

What a single-machine run fits on the whole training set is fitted here from per-partition pieces
merged on the client in partition order, so it equals the single-machine value up to the order of
floating-point summation:

* standardisation: each partition's ``(n, mean, m2)`` (:func:`kopt.data.preprocess.column_moments`)
  merged exactly (Chan et al.);
* labels: the union of each partition's label values (the classes), or the target's moments;
* ``standardize: auto``: each partition's column minima and maxima
  (:func:`kopt.data.preprocess.range_stats`) merged, and the single-machine rule applied to them;
* the bandwidth rules (``median``, ``scale``): the same seeded subsample of row indices
  (:func:`kopt.contract.bandwidth.subsample_rows`), those rows (2,000 by default) fetched from their
  partitions, and the same rule applied to them (:func:`kopt.contract.bandwidth.resolve_bandwidth`).

The training partitions are then standardized and label-encoded on the workers; the test
partitions stay raw (the model applies its own preprocessing when it scores them).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..contract.bandwidth import RULES, subsample_rows
from ..contract.problem import Problem
from ..data.preprocess import (
    Preprocessor,
    check_column_scales,
    column_moments,
    merge_moments,
    merge_range_stats,
    moments_std,
    range_stats,
    scaling_rule,
)
from ..errors import DataError
from . import partitions as _partitions


def partitions_for(spec, data, client, n_parts) -> _partitions.Partitions:
    """The run's raw partitions: from the spec's data section, or from dask collections given as ``data``."""
    if data is None:
        return _partitions.from_spec(client, spec["data"], n_parts)
    if not _partitions.is_dask_collection(data):
        raise DataError("on a Dask cluster, data given from Python must be dask collections: "
                        "(dask.array X, y[, X_test, y_test]) or dask.dataframe objects; or name the files in the "
                        "spec's data section so the workers read them")
    return _partitions.from_arrays(client, data, n_parts)


def fit_preprocessor(parts, target, data_spec) -> Preprocessor:
    """The :class:`Preprocessor` of the whole training set, from per-partition statistics."""
    scales = data_spec.get("column_scales")
    check_column_scales(scales, parts.d)  # applied after standardizing, as on one machine
    pre = Preprocessor(target, n_features=parts.d, column_scales=scales)
    standardize = data_spec["standardize"]
    if standardize == "auto":  # the single-machine rule (kopt.data.preprocess.scaling_rule) on merged ranges
        pieces = parts.gather(parts.map(_range_stats))
        total = pieces[0]
        for p in pieces[1:]:
            total = merge_range_stats(total, p)
        standardize, pre.auto_rule = scaling_rule(total)
    if standardize:
        moments = parts.gather(parts.map(_moments))
        total = moments[0]
        for m in moments[1:]:
            total = merge_moments(total, m)
        pre.mean, pre.scale = total[1], moments_std(total[0], total[2])
        if any(parts.gather(parts.map(_is_sparse))):  # sparse rows are scaled, not centered (column_stats)
            pre.mean = np.zeros_like(pre.mean)
    labels = parts.gather(parts.map(_label_summary, target))
    if labels[0] is None:
        return pre
    if target == "real":
        total = labels[0]
        for m in labels[1:]:
            total = merge_moments(total, m)
        if data_spec["standardize_target"]:
            pre.y_mean, pre.y_scale = float(total[1][0]), float(moments_std(total[0], total[2])[0])
    else:
        pre._fit_labels(np.concatenate(labels), False, "training data")
    return pre


def _range_stats(part):
    return range_stats(part["X"])


def _is_sparse(part):
    return hasattr(part["X"], "tocsr")


def _moments(part):
    return column_moments(part["X"])


def _label_summary(part, target):
    y = part["y"]
    if y is None:
        return None
    if target == "real":
        if not np.issubdtype(np.asarray(y).dtype, np.number):
            raise DataError(f"training data: a regression loss needs numeric labels, got {np.asarray(y).dtype}")
        yf = np.asarray(y, dtype=np.float64)
        if not np.isfinite(yf).all():
            raise DataError(f"training data: {int((~np.isfinite(yf)).sum())} missing or non-finite labels; set "
                            "data.nonfinite: drop to skip those rows")
        return column_moments(yf[:, None])
    return np.unique(y)


def _prepare(part, pre, dtype, encode):
    """Runs on a worker: the standardized, label-encoded training partition."""
    return {"X": pre.transform(part["X"], dtype=dtype),
            "y": pre.encode(part["y"], "training data") if encode and part["y"] is not None else None}


class PartitionRows:
    """The training and test rows as partitions on a Dask cluster: the row source of a distributed run
    (:func:`kopt.running.assemble.assemble` over it; statistics from per-partition pieces, module docstring)."""

    def __init__(self, spec, data, parts):
        self.spec, self.data, self.parts = spec, data, parts

    def require_labels(self, loss):
        return None  # a partition without labels fails where its labels are read (the loss's own check)

    def label_values(self):
        return np.unique(np.concatenate(self.parts.gather(self.parts.map(_label_summary, "binary"))))

    def fit_preprocessor(self, target, data_spec) -> Preprocessor:
        return fit_preprocessor(self.parts, target, data_spec)

    def prepare(self, pre, dtype):
        kept = pre.kept_columns  # data.column_scales of 0 leave their columns out, as on one machine
        self.parts = dataclasses.replace(self.parts.replace_train(self.parts.map(_prepare, pre, dtype, True)),
                                         d=self.parts.d if kept is None else len(kept))

    def check_labels(self, loss):
        for fut in self.parts.map(_check_labels, loss):
            fut.result()

    def bandwidth_rows(self, spec):
        """The seeded subsample a bandwidth rule (``median``, ``scale``) is resolved on, fetched from the
        partitions: the rows :func:`kopt.contract.bandwidth.resolve_bandwidth` takes on one machine (a numeric
        bandwidth: two rows, for the kernel's input check)."""
        params = spec["model"]["kernel"]
        if params.get("bandwidth") not in RULES:
            return self.parts.take(np.arange(min(self.parts.n, 2)))
        return self.parts.take(subsample_rows(self.parts.n, params.get("bandwidth_subsample", 2000), spec["seed"]))

    def problem_fields(self, backend) -> dict:
        from ..running.assemble import held_out_rows

        held = held_out_rows(self.spec, self.parts.n)  # data.held_out's rows: weight 0 (distributed_held_out)
        self.parts = dataclasses.replace(self.parts, held_out=held)
        return {"X": None, "y": None, "partitions": self.parts,
                "info": {"train": _source(self.spec, self.data), "test": self.spec["data"].get("test"),
                         "raw_X_test": None, "held_out_rows": 0 if held is None else int(len(held))}}


def assemble(spec, data, backend, client, n_parts) -> Problem:
    """The :class:`Problem` of a distributed run (``X``/``y`` on the workers: ``problem.partitions``)."""
    from ..running.assemble import assemble as assemble_rows

    if backend.name != "numpy":
        raise DataError("a Dask cluster runs the numpy backend; set backend: numpy (or auto)")
    return assemble_rows(spec, PartitionRows(spec, data, partitions_for(spec, data, client, n_parts)), backend)


def _check_labels(part, loss):
    loss.check_labels(part["y"], source="training data")


def _source(spec, data):
    if data is not None:
        return "<dask collections>"
    d = spec["data"]
    train = d.get("train")
    return d.get("source") or (", ".join(train) if isinstance(train, list) else train)


def holdout_metrics(problem, model) -> dict:
    """The final test metrics: each test partition scored by the model on its worker, labels and scores
    gathered (one float per test row) and evaluated as on one machine."""
    parts = problem.partitions
    if not parts.test:
        return {}
    from ..numerics.metrics import evaluate

    pieces = parts.gather(parts.map(_score, model, test=True))
    if any(y is None for _, y in pieces):
        return {}
    scores = np.concatenate([s for s, _ in pieces], axis=0)
    y = np.concatenate([y for _, y in pieces])
    return evaluate(problem.preprocessor.target, y, scores, problem.preprocessor)


def _score(part, model):
    return model.decision_function(part["X"]), part["y"]
