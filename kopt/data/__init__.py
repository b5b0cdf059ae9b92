"""The data layer: files and presets -> train/test arrays (see docs/data.md).

- :func:`load_data` reads what a spec's ``data`` section names: CSV/TSV,
  LIBSVM, IDX (optionally gzip/xz/bzip2-compressed), .npy/.npz, or a dataset
  preset (``data.source``), then splits and treats non-finite cells.
- :func:`as_dataset` wraps arrays given through the Python API.
- :func:`read_table` / :func:`read_file` read one file (streaming, cached).
- :class:`Preprocessor` holds the training statistics a model applies at
  prediction time (z-scoring, label coding).
"""
from __future__ import annotations

from .cache import default_data_dir
from .load import Dataset, as_dataset, load_data, split_fraction, split_last
from .preprocess import Preprocessor
from .readers import detect_format, read_file, read_table

__all__ = ["Dataset", "Preprocessor", "as_dataset", "default_data_dir", "detect_format", "load_data",
           "read_file", "read_table", "split_fraction", "split_last"]
