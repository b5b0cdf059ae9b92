"""LIBSVM-format binary data sets with their standard splits."""
from __future__ import annotations

from kopt.data.presets import FilePreset

from . import sources


class Ijcnn1(FilePreset):
    """ijcnn1 (IJCNN 2001 challenge; LIBSVM): 49,990 training rows (ijcnn1.tr + ijcnn1.val), test = ijcnn1.t
    (91,701 rows), 22 dense features."""

    name = "ijcnn1"
    task = "binary"
    summary = "LIBSVM ijcnn1: 49,990 train + 91,701 test rows, 22 features (~4 MB download)"
    origin = "LIBSVM data sets page (Chang & Lin); no licence stated, cite the IJCNN 2001 challenge"
    files = {"train": sources.IJCNN1_TRAIN, "test": sources.IJCNN1_TEST}
    read = {"format": "libsvm", "n_features": 22}


class A9a(FilePreset):
    """a9a (UCI Adult as preprocessed by Platt; LIBSVM): 32,561 training rows, test = a9a.t (16,281), 123
    binary features (feature 123 never occurs in a9a.t: n_features is fixed)."""

    name = "a9a"
    task = "binary"
    summary = "LIBSVM a9a (Adult): 32,561 train + 16,281 test rows, 123 sparse features (~3.5 MB)"
    origin = "LIBSVM data sets page; UCI Adult (CC BY 4.0) preprocessed by J. Platt"
    files = {"train": sources.A9A_TRAIN, "test": sources.A9A_TEST}
    read = {"format": "libsvm", "n_features": 123}


class W8a(FilePreset):
    """w8a (Platt's web-page data; LIBSVM): 49,749 rows, 300 sparse binary features; no test set
    (the LIBSVM w8a.t is not part of the preset)."""

    name = "w8a"
    task = "binary"
    summary = "LIBSVM w8a: 49,749 rows, 300 sparse features, no test set (~3.5 MB)"
    origin = "LIBSVM data sets page (J. Platt's web-page data)"
    files = {"train": sources.W8A_TRAIN}
    read = {"format": "libsvm", "n_features": 300}


class Reuters(FilePreset):
    """lasvm-reuters (money-fx, L. Bottou): 7,770 training and 3,299 test rows, 8,315 tf-idf features
    (rows of unit norm, 0.5% dense), as cleaned by tick-datasets."""

    name = "reuters"
    task = "binary"
    summary = "lasvm-reuters money-fx: 7,770 train + 3,299 test rows, 8,315 sparse tf-idf features (~4 MB)"
    origin = "leon.bottou.org lasvm-reuters, cleaned by X-DataInitiative/tick-datasets (BSD-3)"
    files = {"train": sources.REUTERS_TRAIN, "test": sources.REUTERS_TEST}
    read = {"format": "libsvm", "n_features": 8315}
