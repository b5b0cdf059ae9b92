"""HIGGS (UCI; Baldi, Sadowski & Whiteson 2014; CC BY 4.0): the full set and the packaged 12,500-row sample."""
from __future__ import annotations

import os

from kopt.data.presets import TEST_SET_PARAM, FilePreset

from . import sources

#: the UCI page: "The last 500,000 examples are used as a test set."
UCI_TEST_ROWS = 500_000

#: the packaged sample (higgs-12k): three small files shipped inside kopt_plugins.datasets
SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

_CSV = {"format": "csv", "label": 0, "header": False}


class Higgs(FilePreset):
    """UCI HIGGS: ``HIGGS.csv.gz`` (no header, label 0/1 first, 28 float features, 11,000,000 rows).

    The file is ``data.train`` if given, else ``$KOPT_DATA/higgs/HIGGS.csv.gz``,
    downloaded (2.8 GB) and checksum-verified on first use unless ``data.fetch``
    is false.  Test set: the last 500,000 rows of the rows read (the UCI split)
    unless the spec sets ``data.test``, ``data.test_fraction`` (Zhang & Lai (2025) uses
    0.2) or ``data.test_rows``.
    """

    name = "higgs"
    task = "binary"
    uci_test_rows = UCI_TEST_ROWS
    summary = "UCI HIGGS, 11M x 28 binary (2.8 GB download; test = last 500,000 rows)"
    origin = "UCI Machine Learning Repository (CC BY 4.0)"
    remote = sources.HIGGS
    read = dict(_CSV)
    params = {
        "rows": {"type": "integer", "minimum": 2,
                 "description": "use only the first N rows of the file (the read stops there; the test set "
                                "is then taken from these rows)"},
        **TEST_SET_PARAM,
    }

    def layout(self):
        return {"train": self.remote}

    def standard_split(self):
        return {"test_rows": self.uci_test_rows}

    def resolve(self, data_spec):
        spec = super().resolve(data_spec)
        rows = self.option("rows")
        if rows:
            spec["max_rows"] = min(rows, spec.get("max_rows") or rows)
        return spec


class Higgs12k(FilePreset):
    """higgs-12k: 7,500 training rows (UCI HIGGS rows 1-7,500, LightGBM's example files)
    and 5,000 test rows (H2O's higgs_test_5k).  Shipped inside the package: no download."""

    name = "higgs-12k"
    task = "binary"
    summary = "12,500 HIGGS rows: 7,500 train + 5,000 test (packaged with kopt, ~1 MB)"
    origin = ("UCI HIGGS rows (CC BY 4.0) from microsoft/LightGBM's examples and H2O's higgs_test_5k; "
              "packaged, see kopt_plugins/datasets/data/ATTRIBUTION.md")
    files = {"train": [sources.HIGGS12K_TRAIN, sources.HIGGS12K_TRAIN2], "test": sources.HIGGS12K_TEST}
    read = {"label": 0, "header": False}  # binary.* are tab-separated, higgs_test_5k.csv comma-separated
    bundled = SAMPLE_DIR
