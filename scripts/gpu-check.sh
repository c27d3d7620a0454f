#!/usr/bin/env bash
# Runs the GPU-binding integration test against the real GPUs of this machine: the pilot
# declares as many GPUs as nvidia-smi lists, and every task checks with nvidia-smi that the
# GPU in its CUDA_VISIBLE_DEVICES exists. The test suite itself never needs a GPU.
#   bash scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA GPU here" >&2; exit 2; }
n=$(nvidia-smi -L | grep -c '^GPU ')
[ "$n" -gt 0 ] || { echo "gpu-check: nvidia-smi lists no GPU" >&2; exit 2; }
echo "gpu-check: $n GPU(s)"
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build --silent
PILOTFISH_GPUS=$n PILOTFISH_REAL_GPUS=1 npx jest --selectProjects integration test/integration/client/gpu-binding.test.ts
