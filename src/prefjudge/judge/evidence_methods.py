"""The ``evidence`` and ``hybrid`` method classes, imported only when one of them judges.

:mod:`prefjudge.judge.methods_builtin` registers both by name and traits, as every built-in
method (:func:`~prefjudge.judge.methods.register_lazy_method`); :data:`~prefjudge.judge.METHODS`
imports this module, and with it the sandbox and the verifier that find the facts, when it
is first asked for either class. The traits declared here must equal the registered ones
(:meth:`~prefjudge.judge.methods.LazyMethod.load` checks).

The classes are declared here rather than in :mod:`.facts`, whose source digest every
evidence verdict journal binds (``deciders.rules``): a file judged before stays resumable.
"""

from __future__ import annotations

from prefjudge.judge.facts.judge import EvidenceJudge, HybridJudge
from prefjudge.judge.methods import MODEL_METHOD_CLASSES


class Evidence(EvidenceJudge):
    """``evidence``: facts decide every pair; no model is asked (:class:`EvidenceJudge`)."""

    needs_model = False
    needs_tests = True


class Hybrid(HybridJudge):
    """``hybrid``: facts first, the fallback method's model for the rest (:class:`HybridJudge`).

    Its model calls are the fallback's, made only for the pairs the evidence leaves
    undecided (at most as many as the fallback alone would make, pair for pair).
    """

    needs_model = True
    needs_tests = True
    uses_fallback = True
    calls_bound = "≤"


Hybrid.fallback_methods = MODEL_METHOD_CLASSES  # a live view: every model-only method
