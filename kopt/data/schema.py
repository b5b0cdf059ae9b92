"""JSON schema of the spec's ``data`` section (docs/data.md explains every key)."""

_PATH = {"type": "string", "minLength": 1}

DATA_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "description": "where the data comes from and how it is prepared",
    "properties": {
        "source": {"type": "string", "description": "a dataset preset (kopt plugins lists them), e.g. higgs"},
        "options": {"type": "object", "default": {}, "description": "parameters of the preset named by source"},
        "train": {
            "description": "training file (CSV/TSV, LIBSVM, IDX, optionally .gz/.xz/.bz2; .npy/.npz), "
                           "or a list of files read as one; with a preset: where its file is",
            "oneOf": [_PATH, {"type": "array", "items": _PATH, "minItems": 1}],
        },
        "test": {**_PATH, "description": "test file, read with the training file's layout; "
                                         "or use test_fraction or test_rows"},
        "test_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                          "description": "hold out this fraction of the rows at random: with "
                                         "perm = default_rng(split_seed).permutation(n) and "
                                         "n_test = floor(test_fraction*n + 0.5), train is perm[:n-n_test]"},
        "test_rows": {"type": "integer", "minimum": 1,
                      "description": "the last test_rows rows are the test set (no shuffling), e.g. "
                                     "HIGGS's 500000 or mnist-10k's 2000"},
        "split_seed": {"type": "integer", "minimum": 0, "description": "seed of the train/test split (default: the spec's seed)"},
        "format": {"enum": ["auto", "csv", "tsv", "libsvm", "idx", "npy", "npz"], "default": "auto",
                   "description": "file format; auto: from the name, else the first line"},
        "label": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 1}, {"const": False}],
                  "description": "label column: index (negative counts from the end), header name, or false for "
                                 "none; default: the one CSV header name label, target, class or y (any case), "
                                 "else 0, the first column. A CSV label column of text is read as class names "
                                 "(sorted: the model's classes, predictions in those names)"},
        "header": {"enum": ["auto", True, False], "default": "auto",
                   "description": "whether a CSV's first line names the columns (auto: when a cell is not a number "
                                  "and, if a second line follows, a column of that text holds a number there)"},
        "n_features": {"type": "integer", "minimum": 1, "description": "LIBSVM feature count (default: the largest index)"},
        "zero_based": {"enum": ["auto", True, False], "default": "auto",
                       "description": "LIBSVM indices start at 0 (auto: when an index 0 occurs)"},
        "sparse": {"enum": ["auto", True, False], "default": "auto",
                   "description": "LIBSVM as a scipy CSR matrix, dense, or auto (dense from 25% non-zeros)"},
        "max_rows": {"type": "integer", "minimum": 1,
                     "description": "read at most this many training rows (the read stops there; splits apply "
                                    "to the rows read)"},
        "standardize": {"enum": [True, False, "auto"], "default": "auto",  # chosen by measurement: docs/design/preprocessing-and-bandwidth.md
                        "description": "z-score features with training statistics (sparse data: scaled, not "
                                       "centered); auto: leave sparse data, data within [0, 1] (indicators) and "
                                       "non-negative data whose columns share one range (8-bit pixels 0..255) "
                                       "alone, z-score the rest (docs/defaults.md)"},
        "standardize_target": {"type": "boolean", "default": False, "description": "z-score a regression target (predictions are mapped back)"},
        "column_scales": {"type": ["array", "null"], "items": {"type": "number", "minimum": 0}, "default": None,
                          "description": "one multiplier per feature column, applied after standardizing (0 drops "
                                         "the column: it is left out of the rows every solver and kernel sees, and "
                                         "the model reads it no more): one length scale per column, bandwidth / "
                                         "scale, for every kernel; solver: auto chooses it past 50,000 training rows "
                                         "(docs/defaults.md)"},
        "class_weight": {"anyOf": [{"enum": ["balanced", None]},
                                   {"type": "object", "additionalProperties": {"type": "number", "minimum": 0,
                                                                                   "title": "a class weight"}}],
                         "description": "weights of the classes of a classification target, multiplying the rows' "
                                        "weights in the loss, solver auto's validation score and the probability "
                                        "calibration: absent or null (none; the default), balanced (n / (classes x rows of the class); "
                                        "auto then chooses by balanced accuracy) or {label: weight} (a class not "
                                        "named: 1)"},
        "held_out": {"anyOf": [{"type": "null"},
                               {"type": "object", "required": ["rows"], "additionalProperties": False,
                                "properties": {"rows": {"type": "integer", "minimum": 1},
                                               "seed": {"type": "integer", "minimum": 0}}}],
                     "description": "training rows left out of the fit: {rows: m, seed: s} gives m seeded rows "
                                    "(kopt.running.validation.make_splits(n, s), s defaulting to the spec's seed) "
                                    "weight 0; they stay in place (standardization still reads them) and the model "
                                    "is fitted on the others, which must be at least 2 rows (of two classes or more for a "
                                    "classifier). solver: auto's large route names them where the rows "
                                    "it held out could not change the model (docs/defaults.md)"},
        "nonfinite": {"enum": ["error", "drop", "zero", "mean"], "default": "error",
                      "description": "NaN/inf/missing cells: error, drop the rows, or fill with zero or the "
                                     "training column mean"},
        "cache": {"type": "boolean", "default": True,
                  "description": "cache parsed text files as .npy under $KOPT_DATA/cache, memory-mapped on later runs"},
        "fetch": {"type": "boolean", "default": True, "description": "download a preset's missing file"},
    },
}
