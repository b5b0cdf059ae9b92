"""docs/sklearn.md shows docs/benchmarks/sklearn_gridsearch.py verbatim, so the example runs as written."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gridsearch_example_is_the_script():
    doc = (ROOT / "docs" / "sklearn.md").read_text(encoding="utf-8")
    script = (ROOT / "docs" / "benchmarks" / "sklearn_gridsearch.py").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    assert script in blocks, "docs/sklearn.md's GridSearchCV example differs from docs/benchmarks/sklearn_gridsearch.py"


def test_the_expected_failures_table_names_real_checks():
    import pytest

    pytest.importorskip("sklearn", minversion="1.6")
    from kopt.sklearn.checks import WEIGHT_CHECKS

    doc = (ROOT / "docs" / "sklearn.md").read_text(encoding="utf-8")
    for name in ("check_methods_subset_invariance", "check_methods_sample_order_invariance", *WEIGHT_CHECKS[:1]):
        assert name in doc
