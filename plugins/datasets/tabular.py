"""California housing and MNIST with their standard splits."""
from __future__ import annotations

from kopt.data.presets import TEST_SET_PARAM, FilePreset

from . import sources


class CalHousing(FilePreset):
    """California housing (Pace & Barry 1997): 20,640 rows, 8 features, target = median house value (the
    last column).  Standard split: 80/20 by ``default_rng(split_seed).permutation`` (split_seed defaults to
    the spec's seed; the standard split is seed 0).  Set ``standardize_target: true`` to z-score the target."""

    name = "cal_housing"
    task = "regression"
    summary = "California housing: 20,640 x 8 regression, 80/20 seeded split (440 kB download)"
    origin = "StatLib (Pace & Barry 1997) via scikit-learn's figshare archive"
    files = {"train": sources.CAL_HOUSING}
    read = {"format": "csv", "label": -1, "header": False}
    split = {"test_fraction": 0.2}


class Mnist(FilePreset):
    """MNIST (LeCun, Cortes & Burges), 10 classes, 784 pixel features.

    ``subset: 10k`` (default, the mnist-10k set): the t10k files only, the first 8,000 images for
    training and the last 2,000 for testing.  ``subset: full``: the 60,000 training images, tested on t10k.
    """

    name = "mnist"
    task = "multiclass"
    summary = "MNIST digits: mnist-10k (8,000 + 2,000 of t10k; 1.7 MB) or full 60,000 + 10,000 (11.6 MB)"
    origin = "yann.lecun.com/exdb/mnist (commonly redistributed under CC BY-SA 3.0)"
    read = {"format": "idx"}
    params = {
        "subset": {"enum": ["10k", "full"], "default": "10k",
                   "description": "10k: mnist-10k (first 8,000 / last 2,000 of t10k); full: train 60,000, test t10k"},
        **TEST_SET_PARAM,
    }

    @classmethod
    def option_sets(cls):
        """The option sets that choose different files (``kopt data import`` looks for all of them)."""
        return [{"subset": "10k"}, {"subset": "full"}]

    def layout(self):
        if self.option("subset", "10k") == "full":
            return {"train": sources.MNIST_TRAIN_IMAGES, "test": sources.MNIST_T10K_IMAGES,
                    "extra": [sources.MNIST_TRAIN_LABELS, sources.MNIST_T10K_LABELS]}
        return {"train": sources.MNIST_T10K_IMAGES, "extra": [sources.MNIST_T10K_LABELS]}

    def standard_split(self):
        return {"test_rows": 2000}
