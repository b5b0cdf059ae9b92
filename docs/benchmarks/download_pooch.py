"""kopt's downloader against pooch's on the same file, served from 127.0.0.1 (docs/design/data-reading.md, 'Why not pooch').

    python docs/benchmarks/download_pooch.py [--mb 256] [--repeat 3]   (needs: pip install pooch)

Serves a file of random bytes (and its gzip copy) with Python's http.server, then times, each in a fresh
folder: kopt.data.download.fetch (SHA-256 of the bytes, atomic rename) and pooch.retrieve (known_hash,
the same checks), and the check pooch has no counterpart for: kopt's content checksum of a gzip copy.
Also times ``import`` of each in a fresh interpreter.  Writes download_pooch.json next to this file.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import http.server
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(folder):
    handler = functools.partial(_Quiet, directory=folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _import_s(stmt, repeat):
    times = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", f"import time; t = time.perf_counter(); {stmt}; "
                              "print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
        times.append(float(out.stdout))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import pooch

    from kopt.cli.bench.roofline import run_record
    from kopt.data.download import Remote, fetch

    served = tempfile.mkdtemp(prefix="kopt-dl-src-")
    data = os.urandom(args.mb << 20)
    Path(served, "blob.bin").write_bytes(data)
    Path(served, "blob.bin.gz").write_bytes(gzip.compress(data, compresslevel=1))
    sha = hashlib.sha256(data).hexdigest()
    gz_sha = hashlib.sha256(Path(served, "blob.bin.gz").read_bytes()).hexdigest()
    server = _serve(served)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    runs = {"kopt_fetch": [], "pooch_retrieve": [], "kopt_fetch_gzip_content_checksum": []}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            fetch(Remote(f"{base}/blob.bin", "blob.bin", sha256=sha, size=len(data)), Path(d) / "blob.bin",
                  progress=False)
            runs["kopt_fetch"].append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            pooch.retrieve(f"{base}/blob.bin", known_hash=f"sha256:{sha}", fname="blob.bin", path=d,
                           progressbar=False)
            runs["pooch_retrieve"].append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()  # the gzip copy checked against the SHA-256 of its decompressed bytes
            fetch(Remote(f"{base}/blob.bin.gz", "blob.bin.gz", content_sha256=sha), Path(d) / "blob.bin.gz",
                  progress=False)
            runs["kopt_fetch_gzip_content_checksum"].append(time.perf_counter() - t)
    server.shutdown()
    result = {
        "mb": args.mb, "repeat": args.repeat, "gzip_sha256": gz_sha,
        "median_s": {k: round(statistics.median(v), 3) for k, v in runs.items()},
        "runs_s": {k: [round(x, 3) for x in v] for k, v in runs.items()},
        "import_s": {"kopt.data.download": round(_import_s("import kopt.data.download", args.repeat), 3),
                     "pooch": round(_import_s("import pooch", args.repeat), 3),
                     "requests": round(_import_s("import requests", args.repeat), 3)},
        "versions": {"pooch": pooch.__version__, "python": platform.python_version()},
        **run_record(),
    }
    out = Path(__file__).with_suffix(".json")
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["median_s"]), json.dumps(result["import_s"]))


if __name__ == "__main__":
    main()
