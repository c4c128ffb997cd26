"""Stage 3: personas (vibe-testing, arXiv 2604.14137).

Users personalise both what they ask and how they judge. This package builds persona
profiles (:mod:`.profile`), rewrites benchmark prompts in a persona's voice with semantic
and deterministic preservation checks (:mod:`.rewrite`), compares two models' responses
per dimension with the persona's output preferences (:mod:`.compare`), and reports where
the preferred model flips between original and persona prompts (:mod:`.flips`);
:mod:`.summary` counts what a rewrite run accepted and rejected. :mod:`.run` holds the
stages as use cases (``profile_file``, ``rewrite_file``, ``compare_files``, ``flips_file``),
which ``prefjudge persona ...`` and ``prefjudge run`` call.
"""
