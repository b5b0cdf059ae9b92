"""The UCI HIGGS data set (Baldi, Sadowski & Whiteson 2014): 11,000,000 rows, label first, 28 features."""
from __future__ import annotations

import os

from kopt.components import DatasetPreset
from kopt.data.cache import default_data_dir
from kopt.data.download import Remote, ensure
from kopt.errors import DataError

HIGGS_REMOTE = Remote(
    url="https://archive.ics.uci.edu/ml/machine-learning-databases/00280/HIGGS.csv.gz",
    filename="HIGGS.csv.gz",
    sha256="ea302c18164d4e3d916a1e2e83a9a8d07069fa6ebc7771e4c0540d54e593b698",
    size=2_816_407_858,
    mirrors=("http://mlphysics.ics.uci.edu/data/higgs/HIGGS.csv.gz",),
    provenance="size and sha256 as published by tensorflow/datasets (url_checksums/higgs.txt) and matched "
               "by several independent downloads; not re-computed by kopt (no network where it was written)",
)

#: the UCI page: "The last 500,000 examples are used as a test set."
UCI_TEST_ROWS = 500_000


class Higgs(DatasetPreset):
    """UCI HIGGS: ``HIGGS.csv.gz`` (no header, label 0/1 first, 28 float features).

    The file is ``data.train`` if given, else ``$KOPT_DATA/HIGGS.csv.gz``,
    downloaded and checksum-verified on first use unless ``data.fetch`` is
    false.  Test set: the last 500,000 rows of the rows read (the UCI split)
    unless the spec sets ``data.test``, ``data.test_fraction`` (papers/004
    uses 0.2) or ``data.test_rows``.
    """

    name = "higgs"
    uci_test_rows = UCI_TEST_ROWS
    summary = "UCI HIGGS, 11M x 28 binary (downloaded on first use; test = last 500,000 rows)"
    remote = HIGGS_REMOTE
    params = {
        "rows": {"type": "integer", "minimum": 2,
                 "description": "use only the first N rows of the file (the read stops there; the test set "
                                "is then taken from these rows)"},
    }

    def resolve(self, data_spec):
        spec = dict(data_spec)
        default = os.path.join(str(default_data_dir()), self.remote.filename)
        train = spec.get("train") or default
        for path in train if isinstance(train, list) else [train]:
            if os.path.isfile(path):
                continue
            if os.path.basename(path) != self.remote.filename:
                raise DataError(f"{path}: file not found (data.train of the higgs preset)")
            ensure(self.remote, path, allow_fetch=spec.get("fetch", True))
        spec.update(train=train, format="csv", label=0, header=False)
        rows = self.options.rows
        if rows:
            spec["max_rows"] = min(rows, spec.get("max_rows") or rows)
        if not any(spec.get(k) for k in ("test", "test_fraction", "test_rows")):
            spec["test_rows"] = self.uci_test_rows
        return spec

    @classmethod
    def supports(cls):
        return "file preset, binary, downloads"
