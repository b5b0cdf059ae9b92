"""``kopt model-hash``: the content hash of saved models."""
from __future__ import annotations


def cmd_model_hash(args):
    from ..models.model import content_hash, read_model_files

    for path in args.models:
        meta, arrays, _ = read_model_files(path)
        print(f"{content_hash(meta, arrays)}  {path}")
    return 0

