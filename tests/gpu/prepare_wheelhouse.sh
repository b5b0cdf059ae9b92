#!/usr/bin/env bash
# Fill .whl/ (git-ignored through .git/info/exclude) with the wheels tests/gpu/device_check.sh needs on a
# GPU machine that cannot reach the package index: kopt's dependencies missing from the machine's image
# (the CUDA image of the device tool has CuPy, NumPy, SciPy, pytest, hypothesis, PyYAML, pluggy, attrs and
# threadpoolctl, but no jsonschema) and the build backend kopt installs with in editable mode (setuptools >= 77,
# wheel and its packaging).
# Run it where pip reaches the index, then carry .whl with the repository (device_check.sh finds it).
#
#   bash tests/gpu/prepare_wheelhouse.sh [PYTHON_VERSION]    # default 3.12, the device image's Python
set -euo pipefail
cd "$(dirname "$0")/../.."
PYV="${1:-3.12}"
DEST=.whl
mkdir -p "$DEST"
EXCLUDE="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.whl/' "$EXCLUDE" 2>/dev/null || echo '/.whl/' >> "$EXCLUDE"
PLATFORMS=()
for n in 2_28 2_27 2_24 2_17 2014 1; do
  case $n in 2014|1) PLATFORMS+=(--platform "manylinux${n}_x86_64") ;; *) PLATFORMS+=(--platform "manylinux_${n}_x86_64") ;; esac
done
# compiled wheels for the device's interpreter; pure-Python ones as they are
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
  "${PLATFORMS[@]}" -d "$DEST" rpds-py
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" -d "$DEST" \
  jsonschema jsonschema-specifications referencing "setuptools>=77" wheel "packaging>=24" "typing-extensions>=4.4"
ls -l "$DEST"
du -sh "$DEST"
