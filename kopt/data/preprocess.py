"""Train-statistics preprocessing kept in the model: z-scoring and label encoding."""
from __future__ import annotations

import numpy as np

from ..errors import DataError


def check_column_scales(column_scales, n_features, source="training data"):
    """Raise :class:`DataError` unless ``data.column_scales`` (None: none) holds one multiplier per column of the
    ``n_features`` and keeps at least one (the same words on one machine and on a Dask cluster)."""
    if column_scales is not None and np.shape(column_scales) != (n_features,):
        raise DataError(f"data.column_scales has {np.size(column_scales)} values and {source} {n_features} "
                        "columns: give one multiplier per column (0 drops a column)")
    if column_scales is not None and not np.any(np.asarray(column_scales, dtype=np.float64) != 0):
        raise DataError(f"data.column_scales drops every one of the {n_features} columns of {source} (all 0): "
                        "keep at least one column (a positive multiplier)")


class Preprocessor:
    """Feature standardisation and label mapping fitted on the training data.

    Stored in the model file (``to_arrays``/``to_meta``) so ``predict`` applies
    exactly the training transform and maps outputs back to the user's labels.
    """

    def __init__(self, target: str, mean=None, scale=None, classes=None, y_mean=0.0, y_scale=1.0, n_features=None,
                 column_scales=None, drops_zero_columns=True):
        self.target = target
        self.mean = mean
        self.scale = scale
        #: ``data.column_scales``: multipliers applied after standardizing (float32 products of the standardized
        #: values, so ``solver: auto``'s search, which multiplies its rows by them, sees the same bits)
        self.column_scales = None if column_scales is None else np.asarray(column_scales, dtype=np.float64)
        #: whether a column of scale 0 is left out of the transformed rows (every kernel then sees the same distances
        #: and products on fewer columns); model files written before it keep such columns as zeros
        self.drops_zero_columns = bool(drops_zero_columns)
        self.classes = classes  # original label values (binary: [neg, pos]; multiclass: sorted ids)
        self.y_mean = float(y_mean)
        self.y_scale = float(y_scale)
        self.n_features = n_features
        self.auto_rule = None  # standardize: auto's reason (report.json says it); None when not auto

    # -- fitting -------------------------------------------------------------
    @classmethod
    def fit(cls, X, y, target: str, *, standardize=True, standardize_target=False, source="training data",
            sample_weight=None, column_scales=None):
        """``standardize``: True, False or ``"auto"`` (:func:`scaling_rule` decides);
        ``sample_weight``: row weights (positive); the statistics are then weighted means;
        ``column_scales``: one multiplier per column after standardizing (0: the column is dropped), folded into
        the scale (a column of scale 0 is divided by infinity)."""
        n_features = X.shape[1]
        mean = scale = None
        why = None
        if standardize == "auto":
            standardize, why = scaling_rule(range_stats(X))
        if standardize:
            mean, scale = column_stats(X) if sample_weight is None else weighted_column_stats(X, sample_weight)
        check_column_scales(column_scales, n_features, source)
        pre = cls(target, mean, scale, n_features=n_features, column_scales=column_scales)
        pre.auto_rule = why
        if y is not None:
            pre._fit_labels(np.asarray(y), standardize_target, source, sample_weight)
        return pre

    def _fit_labels(self, y, standardize_target, source, sample_weight=None):
        bad = ~np.isfinite(y.astype(np.float64, copy=False)) if np.issubdtype(y.dtype, np.number) else None
        if bad is not None and bad.any():
            raise DataError(f"{source}: {int(bad.sum())} missing or non-finite labels (first in data row "
                            f"{int(np.argmax(bad)) + 1}); set data.nonfinite: drop to skip those rows")
        if self.target in ("real", "two_sample") and not np.issubdtype(y.dtype, np.number) and y.dtype != bool:
            kind = "a regression" if self.target == "real" else "a two-sample"
            raise DataError(f"{source}: {kind} loss needs numeric labels, got {y.dtype} values such as {y[0]!r}")
        if self.target in ("binary", "two_sample"):
            classes = np.unique(y)
            if classes.size != 2:
                raise DataError(
                    f"{source}: a {self.target} loss needs exactly two label values, found {classes.size}"
                    f" ({_preview(classes)})"
                    + ("; use a multiclass loss (e.g. softmax) or a regression loss" if classes.size > 2 else "")
                )
            self.classes = classes
        elif self.target == "multiclass":
            classes = np.unique(y)
            if classes.size < 2:
                raise DataError(f"{source}: a multiclass loss needs at least two classes, found {classes.size}")
            if np.issubdtype(classes.dtype, np.floating) and not np.all(classes == np.round(classes)):
                odd = classes[classes != np.round(classes)]
                raise DataError(f"{source}: a multiclass loss needs integer class labels, found {_preview(odd)}"
                                f" among {classes.size} distinct values; is this a regression target?")
            self.classes = classes
        elif self.target == "real":
            if standardize_target and sample_weight is not None:
                yf = y.astype(np.float64)
                self.y_mean = float(np.average(yf, weights=sample_weight))
                self.y_scale = float(np.sqrt(np.average((yf - self.y_mean) ** 2, weights=sample_weight))) or 1.0
            elif standardize_target:
                self.y_mean = float(np.mean(y, dtype=np.float64))
                self.y_scale = float(np.std(y, dtype=np.float64)) or 1.0

    # -- applying ------------------------------------------------------------
    @property
    def kept_columns(self):
        """The input columns the transformed rows hold, in order, where ``data.column_scales`` drops some (None: all)."""
        if self.column_scales is None or not self.drops_zero_columns or np.all(self.column_scales != 0):
            return None
        return np.flatnonzero(self.column_scales != 0)

    def transform(self, X, dtype=np.float32, source="the data"):
        """Apply the training standardisation; a new array (``X`` is never modified).

        Dense input is processed in row blocks into one preallocated output, so
        the peak is the input plus the output (no full-size temporaries).  Columns of
        ``data.column_scales`` 0 are left out (:attr:`kept_columns`).
        """
        if X.shape[1] != self.n_features:
            raise DataError(f"{source} has {X.shape[1]} features, the training data had {self.n_features}")
        keep = self.kept_columns
        cs = None if self.column_scales is None else self.column_scales.astype(dtype)
        mean, scale = self.mean, self.scale
        if keep is not None:
            cs = cs[keep]
            mean = None if mean is None else mean[keep]
            scale = None if scale is None else scale[keep]
        if hasattr(X, "tocsr"):  # sparse: scale only (centering would densify)
            X = X.tocsr()
            X = (X if keep is None else X[:, keep]).astype(dtype)
            if scale is not None:
                X = X.multiply(1.0 / scale.astype(dtype)).tocsr()
            return X if cs is None else X.multiply(cs).tocsr()
        if mean is None:
            X = np.asarray(X if keep is None else X[:, keep], dtype=dtype)
            return X if cs is None else X * cs
        width = X.shape[1] if keep is None else len(keep)
        out = np.empty((X.shape[0], width), dtype=dtype)
        mean = mean.astype(dtype)
        scale = scale.astype(dtype)
        step = max(1, (1 << 22) // max(1, X.shape[1]))
        release = _page_release(X)
        for i in range(0, X.shape[0], step):
            blk = out[i : i + step]
            rows = X[i : i + step]
            np.subtract(rows if keep is None else rows[:, keep], mean, out=blk, dtype=dtype, casting="unsafe")
            np.divide(blk, scale, out=blk)
            if cs is not None:
                np.multiply(blk, cs, out=blk)
            if release is not None:
                release(rows)
        return out

    def encode(self, y, source="labels"):
        """User labels -> solver labels ({-1,+1}, class ids, {0,1}, or scaled reals)."""
        y = np.asarray(y)
        if self.target in ("binary", "two_sample", "multiclass"):
            idx = np.searchsorted(self.classes, y)
            idx = np.clip(idx, 0, len(self.classes) - 1)
            bad = self.classes[idx] != y
            if np.any(bad):
                raise DataError(
                    f"{source}: label {_preview(y[bad][:1])} was not seen in training (classes: {_preview(self.classes)})"
                )
            if self.target == "binary":
                return np.where(idx == 1, 1.0, -1.0)
            if self.target == "two_sample":
                return idx.astype(np.float64)
            return idx.astype(np.int64)
        if self.target == "real":
            return (y.astype(np.float64) - self.y_mean) / self.y_scale
        return y

    def decode(self, scores):
        """Solver outputs -> user labels (binary: sign; multiclass: argmax) or values."""
        scores = np.asarray(scores)
        if self.target == "binary":
            return self.classes[(scores > 0).astype(np.int64)]
        if self.target == "multiclass":
            return self.classes[np.argmax(scores, axis=1)]
        if self.target == "real":
            return scores * self.y_scale + self.y_mean
        return scores

    # -- model file ----------------------------------------------------------
    def to_arrays(self):
        out = {}
        if self.mean is not None:
            out["pre_mean"], out["pre_scale"] = self.mean, self.scale
        if self.classes is not None:
            out["pre_classes"] = np.asarray(self.classes)
        if self.column_scales is not None:
            out["pre_column_scales"] = self.column_scales
        return out

    def to_meta(self):
        out = {"target": self.target, "y_mean": self.y_mean, "y_scale": self.y_scale, "n_features": int(self.n_features)}
        if self.column_scales is not None:
            out["drops_zero_columns"] = self.drops_zero_columns
        return out

    @classmethod
    def from_file(cls, meta, arrays):
        return cls(
            meta["target"],
            arrays.get("pre_mean"),
            arrays.get("pre_scale"),
            arrays.get("pre_classes"),
            meta["y_mean"],
            meta["y_scale"],
            meta["n_features"],
            arrays.get("pre_column_scales"),
            drops_zero_columns=bool(meta.get("drops_zero_columns", False)),  # older files kept such columns as zeros
        )


#: ``standardize: auto``'s common-range test: this share of the non-constant columns must reach ...
COMMON_RANGE_SHARE = 0.9
#: ... at least this fraction of the largest value (8-bit pixels: most columns reach 255, none exceed it)
COMMON_RANGE_FRACTION = 0.5


def range_stats(X):
    """What ``standardize: auto`` decides on: ``None`` for sparse data, else the column minima and
    maxima ``(lo, hi)`` (float64; :func:`merge_range_stats` merges them over pieces of the rows)."""
    if hasattr(X, "tocsr"):
        return None
    lo = hi = None
    step = 1 << 16
    for i in range(0, X.shape[0], step):
        chunk = np.asarray(X[i : i + step])
        if not chunk.size:
            continue
        a, b = chunk.min(axis=0).astype(np.float64), chunk.max(axis=0).astype(np.float64)
        lo, hi = (a, b) if lo is None else (np.minimum(lo, a), np.maximum(hi, b))
    return lo, hi


def merge_range_stats(a, b):
    """The :func:`range_stats` of the rows of two pieces."""
    if a is None or b is None:
        return None
    if a[0] is None:
        return b
    if b[0] is None:
        return a
    return np.minimum(a[0], b[0]), np.maximum(a[1], b[1])


def scaling_rule(stats) -> tuple:
    """``(z-score?, why)`` for the :func:`range_stats` of the training rows (docs/defaults.md; why:
    docs/design/preprocessing-and-bandwidth.md):

    * sparse: no (z-scoring would make it dense, and scaling alone scored worse on the sparse sets);
    * every value in [0, 1]: no (indicators, proportions, pixels / 255);
    * every value >= 0 and the columns share one range -- at least 90% of the non-constant columns
      reach half of the largest value, as 8-bit pixel intensities 0..255 do: no (z-scoring an image's
      rarely non-zero border pixels blows their noise up to unit variance);
    * otherwise yes (unlike columns: physical units, counts, signed features).
    """
    if stats is None:
        return False, "sparse"
    lo, hi = stats
    if lo is None or not lo.size:
        return False, "no rows"
    if lo.min() >= 0.0 and hi.max() <= 1.0:
        return False, "every value in [0, 1]"
    if lo.min() < 0.0:
        return True, "signed values"
    varying = hi[hi > lo]
    top = float(hi.max())
    if varying.size and np.mean(varying >= COMMON_RANGE_FRACTION * top) >= COMMON_RANGE_SHARE:
        return False, f"non-negative columns sharing one range [0, {top:g}]"
    return True, "non-negative columns on unlike scales"


def needs_scaling(X) -> bool:
    """``standardize: auto``: whether to z-score ``X`` (:func:`scaling_rule`)."""
    return scaling_rule(range_stats(X))[0]


def column_stats(X):
    """Column means and standard deviations (float64; zero-variance columns get scale 1).

    Dense input is reduced in row blocks whose mean and sum of squared
    deviations are merged exactly (Chan et al.), so a memory-mapped array is
    read once and large offsets lose no precision.
    """
    n_seen, mean, m2 = column_moments(X)
    if hasattr(X, "tocsr"):  # sparse: scaled, not centered (centering would densify)
        return np.zeros_like(mean), moments_std(n_seen, m2)
    return mean, moments_std(n_seen, m2)


def column_moments(X):
    """``(n, mean, m2)`` of rows in float64: the count, column means and summed squared deviations.

    Rows are reduced in blocks of 65,536 whose moments are merged exactly (:func:`merge_moments`),
    so a memory-mapped array is read once.  Moments of row partitions merged in order give the
    statistics of the whole up to the order of summation (a distributed run's standardisation).
    """
    if hasattr(X, "tocsr"):  # sparse: from the float64 column sums of x and x²
        X = X.tocsr().astype(np.float64)
        n = int(X.shape[0])
        mean = np.asarray(X.sum(axis=0)).ravel() / max(n, 1)
        sq = np.asarray(X.multiply(X).sum(axis=0)).ravel()
        return n, mean, np.maximum(sq - n * mean**2, 0.0)
    n_seen, mean, m2 = 0, np.zeros(X.shape[1]), np.zeros(X.shape[1])
    step = 1 << 16
    for i in range(0, X.shape[0], step):
        chunk = np.asarray(X[i : i + step], dtype=np.float64)
        mb = chunk.mean(axis=0)
        n_seen, mean, m2 = merge_moments((n_seen, mean, m2), (chunk.shape[0], mb, ((chunk - mb) ** 2).sum(axis=0)))
    return n_seen, mean, m2


def merge_moments(a, b):
    """The moments ``(n, mean, m2)`` of two row sets together (Chan et al.)."""
    (na, ma, m2a), (nb, mb, m2b) = a, b
    tot = na + nb
    if tot == 0:
        return a
    delta = mb - ma
    return tot, ma + delta * (nb / tot), m2a + m2b + delta**2 * (na * nb / tot)


def moments_std(n, m2):
    """Standard deviations from moments (zero-variance columns get scale 1)."""
    std = np.sqrt(m2 / max(n, 1))
    std[~(std > 0)] = 1.0
    return std


def weighted_column_stats(X, weights):
    """Weighted column means and standard deviations (float64; zero-variance columns get scale 1).

    With integer weights they equal :func:`column_stats` of the rows repeated that many times.
    Sparse input gets a zero mean (centering would densify), as in :func:`column_stats`.
    """
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        mean = np.asarray(X.T @ w, dtype=np.float64).ravel() / total
        sq = np.asarray(X.multiply(X).T @ w, dtype=np.float64).ravel() / total
        std = np.sqrt(np.maximum(sq - mean**2, 0.0))
        std[std == 0] = 1.0
        return np.zeros_like(mean), std
    step = 1 << 16
    mean = np.zeros(X.shape[1])
    for i in range(0, X.shape[0], step):
        mean += w[i : i + step] @ np.asarray(X[i : i + step], dtype=np.float64)
    mean /= total
    m2 = np.zeros(X.shape[1])
    for i in range(0, X.shape[0], step):
        m2 += w[i : i + step] @ (np.asarray(X[i : i + step], dtype=np.float64) - mean) ** 2
    std = np.sqrt(m2 / total)
    std[~(std > 0)] = 1.0
    return mean, std


def _preview(values, k=6):
    vals = [v.item() if hasattr(v, "item") else v for v in values[:k]]
    return ", ".join(map(repr, vals)) + (", ..." if len(values) > k else "")


def _page_release(X):
    """For rows memory-mapped from a file (a generated or cached set), a callable that hands a block's pages back to
    the system once it is read: the transform reads every row once, and the pages it touched otherwise stayed in the
    process's resident memory (a second copy of the rows: 1.1 GB at 10⁷ rows of 28 float32 columns).  The file's pages
    stay in the system's cache, so a second read is a memory copy.  None where X is not a C-contiguous read-only map
    or the system has no ``madvise``."""
    import mmap

    base = X
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    mm = getattr(base, "_mmap", None)
    if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED") or X.flags.writeable \
            or not X.flags.c_contiguous:
        return None
    try:
        start = np.frombuffer(mm, dtype=np.uint8, count=1).ctypes.data  # the map's first byte
    except (TypeError, ValueError, BufferError):
        return None
    if not start <= X.ctypes.data < start + len(mm):
        return None
    page = mmap.PAGESIZE

    def release(rows):
        lo = rows.ctypes.data - start
        hi = lo + rows.nbytes
        lo = (lo // page + 1) * page  # whole pages only: the pages shared with the next block stay
        hi = (hi // page) * page
        if hi > lo:
            try:
                mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            except (OSError, ValueError):
                pass

    return release
