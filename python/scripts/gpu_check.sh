#!/bin/bash
# The GPU check of the Python client, as one script for a machine with a
# GPU and no Go (build the binary elsewhere: CGO_ENABLED=0 go build -o BIN
# ./cmd/graphmill, and bring it along):
#
#   python/scripts/gpu_check.sh BIN OUTDIR
#
# Run from the repository root. It writes to OUTDIR: env.txt (GPU, CPU,
# library versions, whether PyG can sample), tests.txt (the client's test
# suite, CUDA tests included), bench.json and bench.err (graphmill bench
# python --quick --device cuda: NeighborLoader on the GPU without a cache
# and with a FeatureCache of 10 % and 30 %, against the Go loader, and
# PyG's loader where it can sample), and profile.txt
# (python/scripts/neighbor_profile.py). About 3 minutes on 16 cores.
set -u
BIN=$(realpath "${1:?usage: gpu_check.sh BIN OUTDIR}")
OUT=${2:?usage: gpu_check.sh BIN OUTDIR}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 GRAPHMILL_BIN=$BIN PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  echo "cpus $(nproc)"; grep -m1 "model name" /proc/cpuinfo; grep -o -m1 avx512f /proc/cpuinfo
  df -h /dev/shm | tail -1
  "$PY" -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__, 'cuda', torch.cuda.is_available())"
  "$PY" -c "import torch_geometric as g, torch_geometric.typing as t; print('pyg', g.__version__, 'pyg_lib', t.WITH_PYG_LIB, 'torch_sparse', t.WITH_TORCH_SPARSE)" 2>&1
  "$BIN" --version
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# The loader's graph and payloads live in /dev/shm: a small one (a
# container's 64 MiB) is made larger where this runs as root.
[ "$(id -u)" = 0 ] && mount -o remount,size=48G /dev/shm 2>/dev/null
(cd python && timeout 300 "$PY" -m pytest -q -p no:cacheprovider tests >"$OUT/tests.txt" 2>&1)
echo "tests: rc $? ($(tail -1 "$OUT/tests.txt"))"
timeout 400 "$BIN" bench python --quick --device cuda --caches 10%,30% --python "$PY" --python-path python --json \
  >"$OUT/bench.json" 2>"$OUT/bench.err"
echo "bench python: rc $?"; grep -E "go loader|NeighborLoader" "$OUT/bench.err"
D=$(grep -o "dataset [^ ]*" "$OUT/bench.err" | head -1 | cut -d' ' -f2)
[ -n "$D" ] && timeout 240 "$PY" python/scripts/neighbor_profile.py "$D" --batches 60 >"$OUT/profile.txt" 2>&1
echo "profile: rc $?"; cat "$OUT/profile.txt" | grep '^{'
