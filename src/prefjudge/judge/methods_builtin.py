"""The built-in judging methods: each one's name, class path and traits, registered lazily.

Each method is registered here by name and traits (:func:`~.methods.register_lazy_method`);
its module is imported when :data:`~.methods.METHODS` is first asked for its class (when it
judges). Listing the methods (``--method``, ``--fallback``), reading their traits and the
templates each renders import none of them: not CriterAlign's schemas, not the baselines,
not the sandbox and the verifier behind ``evidence`` and ``hybrid``. Each class declares the
same traits as class attributes (:class:`~prefjudge.judge.common.JudgeMethod`); importing
its module registers it over its entry (``@judge_method``), once the traits are checked.

Standard library only (through :mod:`.methods`), in the order ``--method`` lists them.
"""

from __future__ import annotations

from prefjudge.judge.methods import register_lazy_method

register_lazy_method("criteralign", "prefjudge.judge.criteralign:CriterAlign",
                     calls_per_pair=5, calls_bound="≥",
                     template_stages=("criteria", "criterion_judge", "refine", "synthesis"))
register_lazy_method("monolithic", "prefjudge.judge.baselines:Monolithic",
                     calls_per_pair=2, template_stages=("monolithic",))
register_lazy_method("pointwise", "prefjudge.judge.baselines:Pointwise",
                     calls_per_pair=3, template_stages=("criteria", "pointwise"))
# evidence and hybrid: their classes (.evidence_methods) pull the sandbox and the verifier
register_lazy_method("evidence", "prefjudge.judge.evidence_methods:Evidence",
                     needs_model=False, needs_tests=True)
register_lazy_method("hybrid", "prefjudge.judge.evidence_methods:Hybrid",
                     needs_model=True, needs_tests=True, uses_fallback=True, calls_bound="≤")
