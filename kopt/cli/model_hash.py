"""``kopt model-hash``: the content hash of saved models."""
from __future__ import annotations

import sys


def cmd_model_hash(args):
    """Print each model's content hash; where it differs from the ``model_sha256`` the file records, say so on
    stderr (the model was changed after it was written) and end with exit status 2."""
    from ..models.checks import hash_mismatch
    from ..models.model import content_hash, read_model_files

    status = 0
    for path in args.models:
        meta, arrays, json_path = read_model_files(path)
        computed = content_hash(meta, arrays)
        print(f"{computed}  {path}", flush=True)
        recorded = meta.get("model_sha256")
        if recorded is not None and recorded != computed:
            print(f"kopt: error: {hash_mismatch(json_path, recorded, computed)}", file=sys.stderr)
            status = 2
    return status
