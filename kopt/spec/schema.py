"""The core spec schema, and its composition with every registered component's fragment."""
from __future__ import annotations

import copy

from ..data.schema import DATA_SCHEMA

COMPONENT_SECTIONS = {
    # key path of the section -> component kind
    ("model", "loss"): "loss",
    ("model", "kernel"): "kernel",
    ("model", "regularizer"): "regularizer",
    ("solver",): "solver",
}

def _section(**extra):
    return {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}, **extra}


CORE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "kopt problem spec",
    "type": "object",
    "additionalProperties": False,
    "required": ["model"],
    "properties": {
        "name": {"type": "string", "pattern": r"^(?!\.{1,2}$)[^/\\\x00]+$",
                 "description": "run name (default: the spec file's stem); the default output.dir is runs/NAME, so "
                                "it holds no '/' or '\\' and is not '.' or '..'"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "the seed every random choice derives from"},
        "backend": {"enum": ["auto", "numpy", "cupy"], "default": "auto", "description": "array backend"},
        "data": DATA_SCHEMA,
        "model": {
            "type": "object",
            "additionalProperties": False,
            "required": ["loss", "kernel"],
            "properties": {
                "loss": _section(),
                "kernel": _section(),
                "regularizer": _section(default={"name": "l2", "lambda": "auto"}),
                "form": {"enum": ["primal", "dual", "gp"],
                         "description": "which problem the solver solves (default: the solver's first form)"},
                "features": {
                    "type": "object",
                    "additionalProperties": False,
                    "default": {},
                    "description": "the random-feature map (solvers that use one)",
                    "properties": {
                        "kind": {"enum": ["random", "nystrom"],
                                 "description": "random: the kernel's seeded random-feature sampler; nystrom: the exact "
                                                "kernel on count seeded training rows (solvers that declare it). "
                                                "Default: the solver's default_feature_kind (nystrom for the solvers "
                                                "on Nystrom centers: krr_nystrom, krr_pcg, krr_pairs, svm_nystrom), "
                                                "else random"},
                        "count": {"type": "integer", "minimum": 1, "default": 4096, "description": "M, the number of random features (fixed-map solvers) or Nystrom centers"},
                        "centers": {"enum": ["uniform", "rpcholesky"], "default": "uniform",
                                    "description": "how Nystrom centers are drawn from the training rows: uniform (a "
                                                   "seeded uniform sample of the distinct rows) or rpcholesky "
                                                   "(randomly pivoted Cholesky: each next center drawn in proportion "
                                                   "to what the centers before it leave unexplained)"},
                        "block_size": {"type": "integer", "minimum": 1, "default": 512, "description": "features per seeded block"},
                        "dtype": {"enum": ["float32", "float64"], "default": "float32"},
                        "seed": {"type": "integer", "minimum": 0, "description": "feature seed (default: the spec's seed)"},
                        "cache_blocks": {"type": "integer", "minimum": 0, "default": 0, "description": "how many blocks of feature parameters to keep in memory (0: regenerate)"},
                    },
                },
            },
        },
        "solver": _section(default={"name": "auto"},
                           description="the solver and its options (default: auto, which chooses the route, "
                                       "centers, bandwidth and lambda by measurement: docs/defaults.md)"),
        "execution": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "description": "where the run executes: this process (local), or a Dask cluster (the kopt[dask] extra; "
                           "docs/scale.md)",
            "properties": {
                "engine": {"enum": ["local", "dask"], "default": "local",
                           "description": "local: this process; dask: the training and test rows as partitions on "
                                          "the workers of a Dask cluster (solvers that declare it: kopt plugins)"},
                "scheduler": {"type": ["string", "null"], "default": None,
                              "description": "engine dask: 'local:N' (a LocalCluster of N worker processes), 'local' "
                                             "(one per CPU) or a scheduler address 'tcp://HOST:8786' "
                                             "(kopt solve --scheduler)"},
                "partitions": {"type": ["integer", "null"], "minimum": 1, "default": None,
                               "description": "engine dask: row partitions of the training and test data (null: one "
                                              "per worker)"},
            },
        },
        "output": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "properties": {
                "dir": {"type": "string", "minLength": 1, "description": "output directory (default runs/<name>)"},
                "model": {"type": "boolean", "default": True, "description": "write model.json + model.npz"},
                "report": {"type": "boolean", "default": True, "description": "write report.json"},
                "plot": {"type": "boolean", "default": False, "description": "write convergence.png (needs matplotlib)"},
                "checkpoint_every": {"type": "integer", "minimum": 0, "default": 0, "description": "iterations between checkpoints (0: off)"},
                "overwrite": {"type": "boolean", "default": False, "description": "replace a model in output.dir that another spec trained (kopt solve --force); the same spec always overwrites its own"},
            },
        },
    },
}


def compose(reg) -> dict:
    """The full schema: core + one if/then branch per registered component."""
    schema = copy.deepcopy(CORE_SCHEMA)
    for path, kind in COMPONENT_SECTIONS.items():
        section = schema
        for part in path:
            section = section["properties"][part]
        names = reg.names(kind)
        section["properties"]["name"] = {"enum": names} if names else {"type": "string"}
        section["allOf"] = [
            {"if": {"properties": {"name": {"const": n}}, "required": ["name"]}, "then": reg.get(kind, n).schema()}
            for n in names
        ]
    data = schema["properties"]["data"]
    if reg.names("dataset"):
        data["properties"]["source"] = {"enum": reg.names("dataset")}
        data["allOf"] = [
            {
                "if": {"properties": {"source": {"const": n}}, "required": ["source"]},
                "then": {"properties": {"options": _options_schema(reg.get("dataset", n))}},
            }
            for n in reg.names("dataset")
        ]
    return schema


def _options_schema(cls):
    s = cls.schema()
    s["properties"] = {k: v for k, v in s["properties"].items() if k != "name"}
    s["required"] = [r for r in s["required"] if r != "name"]
    return s
