"""JSON schema of the spec's ``data`` section."""

_PATH = {"type": "string", "minLength": 1}

DATA_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "description": "where the data comes from and how it is prepared",
    "properties": {
        "source": {"type": "string", "description": "a dataset preset (kopt plugins lists them), e.g. higgs"},
        "options": {"type": "object", "default": {}, "description": "parameters of the preset named by source"},
        "train": {
            "description": "training file (CSV/TSV[.gz|.xz|.bz2], LIBSVM, .npy/.npz), or a list of files read as one",
            "oneOf": [_PATH, {"type": "array", "items": _PATH, "minItems": 1}],
        },
        "test": {**_PATH, "description": "test file; or use test_fraction"},
        "test_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "split_seed": {"type": "integer", "minimum": 0, "description": "seed of the train/test split (default: the spec's seed)"},
        "format": {"enum": ["auto", "csv", "tsv", "libsvm", "npy", "npz"], "default": "auto"},
        "label": {"type": ["integer", "string"], "description": "label column: index (negative counts from the end) or header name"},
        "header": {"enum": ["auto", True, False], "default": "auto"},
        "n_features": {"type": "integer", "minimum": 1, "description": "LIBSVM feature count"},
        "zero_based": {"enum": ["auto", True, False], "default": "auto"},
        "max_rows": {"type": "integer", "minimum": 1, "description": "read at most this many training rows"},
        "standardize": {"type": "boolean", "default": True, "description": "z-score features with training statistics"},
        "standardize_target": {"type": "boolean", "default": False, "description": "z-score a regression target (predictions are mapped back)"},
        "nonfinite": {"enum": ["error", "drop", "zero", "mean"], "default": "error", "description": "what to do with NaN/inf cells"},
        "cache": {"type": "boolean", "default": True, "description": "cache parsed arrays as .npy next to KOPT_DATA"},
        "fetch": {"type": "boolean", "default": True, "description": "download a preset's missing file"},
    },
}
