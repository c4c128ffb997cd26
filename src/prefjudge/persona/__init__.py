"""Stage 3: personas (vibe-testing, arXiv 2604.14137).

Users personalise both what they ask and how they judge. This package builds persona
profiles (:mod:`.profile`), rewrites benchmark prompts in a persona's voice with semantic
and deterministic preservation checks (:mod:`.rewrite`), compares two models' responses
per dimension with the persona's output preferences (:mod:`.compare`), and reports where
the preferred model flips between original and persona prompts (:mod:`.flips`);
:mod:`.summary` counts what a rewrite run accepted and rejected. The stages as use cases,
which ``prefjudge persona ...`` and ``prefjudge run`` call: ``profile_file`` (:mod:`.run`),
``rewrite_file`` (:mod:`.rewrite_run`), ``compare_files`` (:mod:`.compare_run`) and
``flips_file`` (:mod:`.flips_run`), all re-exported by :mod:`.run`; :mod:`.stage_common`
holds what they share.
"""
