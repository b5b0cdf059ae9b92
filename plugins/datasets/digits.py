"""Deformed MNIST digits in the manner of MNIST-8M (Loosli, Canu & Bottou 2007; Dai et al.'s 8-vs-6 task).

The source digits are the ``mnist`` preset's 10,000 rows (the MNIST test set, t10k).  The last
``test_digits`` of them (2,000 by default: mnist-10k's test rows) are the test set, real and
undeformed; training row i is a deformation of source digit ``i mod S`` among the other rows (the
first 10,000 - test_digits; for the 8-vs-6 task only its 8s and 6s), so no training row is made
from a test digit.  A deformation, vectorised over a batch of digits:

1. an elastic field (Simard, Steinkraus & Platt 2003): two displacement fields of uniform(-1, 1)
   values per pixel, each smoothed by a Gaussian of ``elastic_sigma`` pixels (scipy.ndimage's
   ``gaussian_filter1d``, applied as the 28 x 28 matrix it is along each image axis) and scaled
   by ``elastic_alpha``;
2. a rotation about the image center, uniform in +-``max_rotation`` degrees, and a translation,
   uniform in +-``max_shift`` pixels on each axis;
3. bilinear resampling of the source digit at the displaced coordinates (zero outside the image),
   rounded to integers in 0..255: the pixel scale of the ``mnist`` preset.

Row i of chunk k depends only on the seed, k and the source digits, so a run resumes at its first
missing chunk and a larger set starts with a smaller one's rows.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import DatasetPreset

SIDE = 28
N_FEATURES = SIDE * SIDE
#: rows per generated chunk (part of the content's key)
CHUNK_ROWS = 1 << 15
#: digits deformed at once within a chunk
BATCH = 2048
VERSION = 1
_TRAIN = 1


def smoothing_matrix(sigma, size=SIDE):
    """G with ``G @ v`` equal to ``scipy.ndimage.gaussian_filter1d(v, sigma)`` (mode reflect) for a length-``size`` v."""
    from scipy import ndimage

    return ndimage.gaussian_filter1d(np.eye(size), sigma, axis=0).astype(np.float32)


def deform(images, rng, *, alpha=34.0, sigma=4.0, max_rotation=10.0, max_shift=2.0):
    """Deformed copies of ``images`` (``(B, 28, 28)``, any real dtype) as float32 in 0..255 (rounded)."""
    B = images.shape[0]
    G = smoothing_matrix(sigma) if alpha else None
    ii, jj = np.meshgrid(np.arange(SIDE, dtype=np.float32), np.arange(SIDE, dtype=np.float32), indexing="ij")
    c = (SIDE - 1) / 2.0
    theta = np.deg2rad(rng.uniform(-max_rotation, max_rotation, B)).astype(np.float32)[:, None, None]
    shift = rng.uniform(-max_shift, max_shift, (2, B)).astype(np.float32)[:, :, None, None]
    cos, sin = np.cos(theta), np.sin(theta)
    di, dj = ii - c, jj - c
    qi = cos * di - sin * dj + c - shift[0]
    qj = sin * di + cos * dj + c - shift[1]
    if alpha:
        fields = rng.uniform(-1.0, 1.0, (2, B, SIDE, SIDE)).astype(np.float32)
        smooth = G @ fields @ G.T  # the Gaussian along both image axes, for every digit at once
        qi = qi + np.float32(alpha) * smooth[0]
        qj = qj + np.float32(alpha) * smooth[1]
    return bilinear(images, qi, qj)


def bilinear(images, qi, qj):
    """``images`` (B, 28, 28) sampled at the real coordinates (qi, qj) (B, 28, 28); zero outside; rounded."""
    B = images.shape[0]
    P = SIDE + 2
    padded = np.zeros((B, P, P), dtype=np.float32)
    padded[:, 1:-1, 1:-1] = images
    flat = padded.reshape(-1)
    fi = np.floor(qi)
    fj = np.floor(qj)
    wi = (qi - fi).astype(np.float32)
    wj = (qj - fj).astype(np.float32)
    fi, fj = fi.astype(np.int64), fj.astype(np.int64)
    # the four neighbours' rows and columns; any outside the image lands on the zero border (-1 or SIDE)
    i0, i1 = np.clip(fi, -1, SIDE) + 1, np.clip(fi + 1, -1, SIDE) + 1
    j0, j1 = np.clip(fj, -1, SIDE) + 1, np.clip(fj + 1, -1, SIDE) + 1
    base = (np.arange(B, dtype=np.int64) * P * P)[:, None, None]
    top = flat[base + i0 * P + j0] * (1 - wj) + flat[base + i0 * P + j1] * wj
    bottom = flat[base + i1 * P + j0] * (1 - wj) + flat[base + i1 * P + j1] * wj
    out = top * (1 - wi) + bottom * wi
    return np.clip(np.rint(out), 0, 255).astype(np.float32)


def mnist_digits():
    """The ``mnist`` preset's 10,000 rows (float32 pixels 0..255) and labels, in file order."""
    from kopt.data import load_data

    ds = load_data({"source": "mnist", "options": {"test_set": False}})
    return np.asarray(ds.X, dtype=np.float32), np.asarray(ds.y, dtype=np.float64)


def split_rows(y, test_digits, classes=None):
    """``(source_rows, test_rows)``: indices into the 10,000 digits (the last ``test_digits`` are the test
    set), keeping only ``classes`` when given."""
    n = y.shape[0]
    rows = np.arange(n)
    keep = np.ones(n, dtype=bool) if classes is None else np.isin(y, classes)
    cut = n - test_digits
    return rows[(rows < cut) & keep], rows[(rows >= cut) & keep]


class DeformedDigits(DatasetPreset):
    """MNIST-8M-style deformed digits, 10 classes: training rows are deformations of the ``mnist`` preset's
    first 10,000 - test_digits digits, test rows the last ``test_digits`` real, undeformed ones."""

    name = "deformed-digits"
    task = "multiclass"
    classes = None
    summary = ("MNIST-8M-style elastically deformed, rotated, shifted MNIST digits, 10 classes, up to 8,000,000 "
               "rows; test = real held-out digits (generated from the mnist preset)")
    params = {
        "rows": {"type": "integer", "minimum": 1, "maximum": 8_000_000, "default": 100_000,
                 "description": "training rows (up to 8*10^6), generated once and memory-mapped"},
        "test_digits": {"type": "integer", "minimum": 1, "maximum": 9_000, "default": 2000,
                        "description": "the last test_digits of the 10,000 mnist digits are the test set (before "
                                       "keeping the task's classes); the others are the sources"},
        "dtype": {"enum": ["float32", "uint8"], "default": "float32",
                  "description": "how the pixels (integers 0..255) are stored: float32 is read without a copy, "
                                 "uint8 takes 4x less disk"},
        "elastic_alpha": {"type": "number", "minimum": 0, "default": 34.0,
                          "description": "scale of the smoothed displacement field, in pixels (0: no elastic part)"},
        "elastic_sigma": {"type": "number", "exclusiveMinimum": 0, "default": 4.0,
                          "description": "the Gaussian smoothing the displacement field, in pixels"},
        "max_rotation": {"type": "number", "minimum": 0, "maximum": 45, "default": 10.0,
                         "description": "rotations uniform in +-max_rotation degrees"},
        "max_shift": {"type": "number", "minimum": 0, "maximum": 6, "default": 2.0,
                      "description": "translations uniform in +-max_shift pixels on each axis"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "the generator's seed"},
    }

    def _key(self):
        o = self.options
        from . import sources

        return {"generator": "deformed-digits", "version": VERSION, "seed": o.seed, "classes": self.classes,
                "test_digits": o.test_digits, "alpha": o.elastic_alpha, "sigma": o.elastic_sigma,
                "rotation": o.max_rotation, "shift": o.max_shift,
                "mnist": sources.MNIST_T10K_IMAGES.content_sha256}

    def layout(self):
        from kopt.data.generated import Layout

        o = self.options
        return Layout(self.name, self._key(), o.rows, N_FEATURES, o.dtype, CHUNK_ROWS, info={"classes": self.classes})

    def generate(self, data_spec):
        from kopt.data import Dataset
        from kopt.data.generated import materialize

        o = self.options
        digits, labels = mnist_digits()
        src, test = split_rows(labels, o.test_digits, self.classes)
        images = digits.reshape(-1, SIDE, SIDE)

        def chunk(k, lo, hi):
            rng = np.random.default_rng([o.seed, _TRAIN, k])
            which = src[np.arange(lo, hi) % src.size]
            out = np.empty((hi - lo, N_FEATURES), dtype=np.float32)
            for a in range(0, hi - lo, BATCH):  # batches whose temporaries stay small
                b = min(hi - lo, a + BATCH)
                out[a:b] = deform(images[which[a:b]], rng, alpha=o.elastic_alpha, sigma=o.elastic_sigma,
                                  max_rotation=o.max_rotation, max_shift=o.max_shift).reshape(b - a, N_FEATURES)
            return out, labels[which]

        def test_rows():
            return digits[test], labels[test]

        X, y, Xt, yt, where = materialize(self.layout(), chunk, test_rows, progress=data_spec.get("progress"))
        info = {"train": f"{self.name}(rows={o.rows}, seed={o.seed}) from {src.size} mnist source digits",
                "test": f"the last {o.test_digits} mnist digits, undeformed ({test.size} rows)", "split": "generated",
                "source_rows": [int(src[0]), int(src[-1])], "n_train": X.shape[0], "n_test": Xt.shape[0],
                "n_features": N_FEATURES, **{f"generated_{k}": v for k, v in where.items()}}
        return Dataset(X, y, Xt, yt, info=info)

    @classmethod
    def supports(cls):
        return "generator, " + cls.task + ", memory-mapped (needs the mnist preset's files)"

    def status(self) -> list:
        """The ``mnist`` preset's files the digits are made from, as ``[(remote, where, path)]``: ``missing`` where
        they are not here (the generator then stops with the offline error naming them)."""
        from kopt.contract.registry import registry

        return registry().get("dataset", "mnist")().status()


class DeformedDigits8v6(DeformedDigits):
    """The 8-vs-6 binary task of Dai et al. (2014) on deformed digits: only the 8s and 6s (labels 8 and 6)."""

    name = "deformed-digits-8v6"
    task = "binary"
    classes = [6, 8]
    summary = ("MNIST-8M-style deformed digits, 8 vs 6 (Dai et al.'s SVM task), up to 8,000,000 rows; test = the "
               "real held-out 8s and 6s (generated from the mnist preset)")
