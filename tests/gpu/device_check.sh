#!/usr/bin/env bash
# The GPU check of issue 27 in one command, on a bare GPU machine holding a copy of the repository:
#
#   bash tests/gpu/device_check.sh              # OUT=/some/empty/folder; the figures land there
#   bash tests/gpu/device_check.sh --dry-run    # or KOPT_DEVICE_DRY_RUN=1: no CuPy, NumPy at small sizes
#
# Stages, each under its own time limit (`timeout`), in order of what matters most; a stage that
# fails or times out is recorded and the next one runs:
#   install     CuPy for the driver's CUDA major (kept if one already imports), kopt with pip install -e .[test]
#   gpu_tests   pytest -m gpu (JUnit XML: gpu_tests.xml)
#   compare     python tests/gpu/device_bench.py compare: every solver family on CuPy against NumPy (compare.jsonl)
#   features    the feature engine on the device against its measured cos/GEMM roofline (bench_features.json)
#   joker       Joker's s/iteration at Zhang & Lai's HIGGS setting, M = 16,384 and 10^5 (bench_joker_device.json)
#   pcg         krr_pcg's s/CG iteration on CuPy beside NumPy (10^5 rows, M = 4,096, and the same model), then
#               CuPy at 10^6 rows, M = 4,096 and 16,384 (bench_pcg_device.json)
#   joker_cli   `kopt bench joker --backend cupy` where that command has --backend (its JSON into the log)
# then summary.json (device, driver, CUDA, CuPy, every stage's status and the headline figures) and
# device_check.log (every stage's output).  At most 7 files, all in $OUT (the device tool returns 8).
#
# Environment: OUT (default ./device-check-out), KOPT_DEVICE_BUDGET_S (whole run, default 540 s),
# KOPT_PYTHON (the interpreter to build the venv from, default python3), KOPT_WHEELHOUSE (a folder of
# wheels for a machine without the package index; default .whl if it exists; tests/gpu/prepare_wheelhouse.sh
# fills it), KOPT_CUPY_PACKAGE (force e.g. cupy-cuda12x).
set -u
cd "$(dirname "$0")/../.."
REPO=$PWD
DRY=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    *) echo "usage: bash tests/gpu/device_check.sh [--dry-run]" >&2; exit 2 ;;
  esac
done
case "${KOPT_DEVICE_DRY_RUN:-0}" in 0|"") ;; *) DRY=1 ;; esac
OUT="${OUT:-$REPO/device-check-out}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUDGET="${KOPT_DEVICE_BUDGET_S:-540}"
RESERVE=15                      # seconds kept for the summary
START=$(date +%s)
LOG="$OUT/device_check.log"
STAGES=$(mktemp -t kopt-device-stages-XXXXXX)
export PYTHONUNBUFFERED=1 KOPT_OFFLINE="${KOPT_OFFLINE:-1}"
export KOPT_DATA="${KOPT_DATA:-$(mktemp -d -t kopt-device-data-XXXXXX)}"
: > "$LOG"

say() { echo "device_check: $*" | tee -a "$LOG" >&2; }

# record NAME STATUS RC SECONDS LIMIT NOTE: one JSON line per stage (summarize.py folds them into summary.json)
record() {
  python3 - "$@" >> "$STAGES" <<'PY'
import json, sys
name, status, rc, seconds, limit, note = sys.argv[1:7]
print(json.dumps({"stage": name, "status": status, "rc": int(rc), "seconds": int(seconds), "limit_s": int(limit),
                  "note": note}))
PY
}

# stage NAME LIMIT_S COMMAND...: run under min(LIMIT_S, what the budget has left); output into the log
stage() {
  local name=$1 limit=$2; shift 2
  local now left t0 rc status
  now=$(date +%s); left=$((BUDGET - (now - START) - RESERVE))
  if [ "$left" -lt 20 ]; then
    say "$name: skipped, ${left}s left of the ${BUDGET}s budget"
    record "$name" skipped -1 0 0 "out of time: ${left}s left of the ${BUDGET}s budget"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  say "$name: start (limit ${limit}s) :: $*"
  echo "----- $name: $* -----" >> "$LOG"
  t0=$(date +%s)
  # everything into the log; on the console all but the JSON lines (the figures are in $OUT)
  timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$LOG" | grep --line-buffered -v '^{' >&2
  rc=${PIPESTATUS[0]}
  case $rc in
    0) status=ok ;;
    124|137) status=timed_out ;;
    *) status=failed ;;
  esac
  say "$name: $status (rc $rc, $(( $(date +%s) - t0 ))s)"
  record "$name" "$status" "$rc" "$(( $(date +%s) - t0 ))" "$limit" ""
}

# ---- the machine: driver, CUDA major, device (nvidia-smi) -----------------------------------------
if [ "$DRY" = 1 ]; then
  SMI="NVIDIA-SMI 580.00.00   Driver Version: 580.00.00   CUDA Version: 13.0 (dry run: a sample header)"
  GPU="(dry run: no GPU)"
elif command -v nvidia-smi >/dev/null 2>&1; then
  SMI=$(nvidia-smi 2>&1 | head -n 5)
  GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)
else
  SMI=""
  GPU="(no nvidia-smi on this machine)"
fi
CUDA_MAJOR=$(echo "$SMI" | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -n 1)
DRIVER=$(echo "$SMI" | sed -n 's/.*Driver Version: *\([0-9.][0-9.]*\).*/\1/p' | head -n 1)
case "$CUDA_MAJOR" in
  11) CUPY_PKG=cupy-cuda11x ;;
  12) CUPY_PKG=cupy-cuda12x ;;
  "") CUPY_PKG="" ;;
  *) CUPY_PKG=cupy-cuda13x ;;   # 13 and later
esac
CUPY_PKG="${KOPT_CUPY_PACKAGE:-$CUPY_PKG}"
say "device: $GPU; driver ${DRIVER:-?}, CUDA ${CUDA_MAJOR:-?} (nvidia-smi) -> ${CUPY_PKG:-no CuPy package}; budget ${BUDGET}s; dry run $DRY"
echo "$SMI" >> "$LOG"

# ---- install ------------------------------------------------------------------------------------
BASE_PY="${KOPT_PYTHON:-python3}"
WHEELS="${KOPT_WHEELHOUSE:-}"
[ -z "$WHEELS" ] && [ -d "$REPO/.whl" ] && WHEELS="$REPO/.whl"
VENV=0
if [ "$DRY" = 1 ]; then
  PY="$BASE_PY"   # the dry run installs nothing: it checks the commands with the interpreter at hand
elif "$BASE_PY" -c "import sys; sys.exit(sys.prefix == sys.base_prefix)" 2>/dev/null; then
  PY="$BASE_PY"   # already a venv (the device image's python3 is one, with CuPy): install into it
else
  PY=/tmp/kopt-device-venv/bin/python; VENV=1   # a system Python: a venv that still sees its packages
fi

install() {
  set -x
  if [ "$VENV" = 1 ]; then
    "$BASE_PY" -m venv --system-site-packages /tmp/kopt-device-venv || return 1
  fi
  local links=() online=0
  [ -n "$WHEELS" ] && links=(--find-links "$WHEELS")
  timeout 20 "$PY" -m pip index versions --timeout 5 --retries 0 pip >/dev/null 2>&1 && online=1
  echo "package index reachable: $online; wheelhouse: ${WHEELS:-none}"
  pipi() {  # the wheelhouse alone first (no network needed), then the package index if it answers
    if [ -n "$WHEELS" ] && "$PY" -m pip install -q --no-index ${links[@]+"${links[@]}"} "$@"; then return 0; fi
    [ "$online" = 1 ] && "$PY" -m pip install -q --timeout 30 ${links[@]+"${links[@]}"} "$@"
  }
  if "$PY" -c "import cupy; print('CuPy', cupy.__version__, 'already here')"; then
    :
  elif [ -n "$CUPY_PKG" ]; then
    # without a CUDA toolkit on the machine the wheel needs the toolkit's libraries from the index: [ctk]
    if ldconfig -p 2>/dev/null | grep -q libnvrtc || ls /usr/local/cuda*/lib64/libnvrtc* >/dev/null 2>&1; then
      pipi "$CUPY_PKG" || return 1
    else
      pipi "$CUPY_PKG[ctk]" || pipi "$CUPY_PKG" || return 1
    fi
  else
    echo "no CUDA version from nvidia-smi: CuPy not installed"; return 1
  fi
  pipi "setuptools>=77" wheel || true
  # kopt with its test extra; without the index: kopt alone, its missing needs from the wheelhouse
  if ! pipi -e ".[test]"; then
    echo "pip install -e .[test] failed; installing kopt without dependencies"
    pipi --no-build-isolation --no-deps -e . || return 1
    pipi jsonschema pluggy pyyaml threadpoolctl scipy numpy pytest hypothesis || true
  fi
  "$PY" -c "import kopt, jsonschema, yaml, pluggy, scipy, threadpoolctl, pytest, hypothesis; print('kopt', kopt.__version__)"
}

if [ "$DRY" = 1 ]; then
  CHECK="import kopt, jsonschema, yaml, pluggy, scipy, threadpoolctl, pytest, hypothesis"
  stage install 60 "$PY" -c "$CHECK; print('dry run: would install ${CUPY_PKG:-?} and kopt[test]; kopt', kopt.__version__)"
else
  export -f install
  export BASE_PY PY VENV WHEELS CUPY_PKG
  stage install 240 bash -c install
fi

# ---- the checks -----------------------------------------------------------------------------------
FLAGS=()
TEST_ARGS=()
if [ "$DRY" = 1 ]; then
  FLAGS=(--dry-run)
  TEST_ARGS=(tests/gpu tests/plugins/regularizers/test_regularizers.py)  # the dry run: a few files, every gpu test in them skips
else
  TEST_ARGS=(tests)
fi
"$PY" -c "import pytest_timeout" >/dev/null 2>&1 && TEST_ARGS=(--timeout 120 "${TEST_ARGS[@]}")  # one test per 120 s at most

stage gpu_tests 150 "$PY" -m pytest -m gpu -q -p no:cacheprovider -rfEs --continue-on-collection-errors --junitxml="$OUT/gpu_tests.xml" "${TEST_ARGS[@]}"
if [ "$DRY" = 1 ]; then
  stage compare 200 "$PY" tests/gpu/device_bench.py compare --out "$OUT" --timeout 120 ${FLAGS[@]+"${FLAGS[@]}"} --tiny --rows 600
else
  stage compare 240 "$PY" tests/gpu/device_bench.py compare --out "$OUT" --timeout 90
fi
stage features 75 "$PY" tests/gpu/device_bench.py features --out "$OUT" ${FLAGS[@]+"${FLAGS[@]}"}
stage joker 120 "$PY" tests/gpu/device_bench.py joker --out "$OUT" ${FLAGS[@]+"${FLAGS[@]}"}
stage pcg 150 "$PY" tests/gpu/device_bench.py pcg --out "$OUT" ${FLAGS[@]+"${FLAGS[@]}"}
if "$PY" -m kopt bench joker --help 2>/dev/null | grep -q -- "--backend"; then
  # its JSON goes into the log, not an eighth file in $OUT
  if [ "$DRY" = 1 ]; then
    stage joker_cli 90 "$PY" -m kopt bench joker --backend numpy --rows 2048 --features 512 --iterations 4 --json "$STAGES.joker.json"
  else
    stage joker_cli 90 "$PY" -m kopt bench joker --backend cupy --rows 262144 --json "$STAGES.joker.json"
  fi
  [ -f "$STAGES.joker.json" ] && { echo "----- joker_cli: bench_joker.json -----"; cat "$STAGES.joker.json"; echo; } >> "$LOG"
  rm -f "$STAGES.joker.json"
else
  say "joker_cli: skipped: kopt bench joker has no --backend option (it runs NumPy); the joker stage measured the device"
  record joker_cli skipped -1 0 0 "kopt bench joker has no --backend option here (it runs NumPy only); see the joker stage"
fi

# ---- summary.json ------------------------------------------------------------------------------------
SUMMARY_ARGS=(--out "$OUT" --stages "$STAGES" --dry-run "$DRY" --driver "${DRIVER:-}" --cuda-major "${CUDA_MAJOR:-}"
              --gpu "$GPU" --seconds "$(( $(date +%s) - START ))")
# kopt's interpreter first (it reads CuPy's device and versions); the system's python3 if that one is broken
"$PY" tests/gpu/summarize.py "${SUMMARY_ARGS[@]}" > "$STAGES.txt" 2>&1 \
  || python3 tests/gpu/summarize.py "${SUMMARY_ARGS[@]}" > "$STAGES.txt" 2>&1
tee -a "$LOG" < "$STAGES.txt"
rm -f "$STAGES.txt"
rm -f "$STAGES"
say "done in $(( $(date +%s) - START ))s; figures in $OUT"
