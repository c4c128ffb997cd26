"""The built-in pair formats: each one's name, module and rank, registered lazily.

Each format is registered here by name (:func:`~.registry.register_lazy_pair_format`); its
module is imported, and registers its :class:`~.registry.PairFormatSpec` over the entry,
when a spec is first asked for (reading or detecting a pair file). Listing the formats
(``--pairs-format``'s choices in ``--help``) imports none of them.

Standard library only (through :mod:`.registry`), in detection order.
"""

from __future__ import annotations

from prefjudge.judge.pairs.formats.registry import register_lazy_pair_format

_HOME = "prefjudge.judge.pairs.formats."

register_lazy_pair_format("prefjudge", _HOME + "prefjudge_jsonl", rank=10)
register_lazy_pair_format("codeprefbench", _HOME + "codeprefbench", rank=20)
register_lazy_pair_format("copilot_arena", _HOME + "copilot_arena", rank=30)
register_lazy_pair_format("bigcodereward", _HOME + "bigcodereward", rank=40)
