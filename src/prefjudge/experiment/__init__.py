"""One experiment from models to leaderboard: ``prefjudge run EXPERIMENT.toml``.

- :mod:`~prefjudge.experiment.config`: the experiment file, checked (file, line, key);
- :mod:`~prefjudge.experiment.plan`: its stages (augment → generate → score → judge →
  rank → correlate → report → leaderboard), each a stage's use case with typed settings
  writing into one results folder, with the model requests each makes; the records it
  lays out are in :mod:`~prefjudge.experiment.plan_stage`, a stage's backend in
  :mod:`~prefjudge.experiment.stage_backend`, and the judge and persona stages in
  :mod:`~prefjudge.experiment.judge_plan` and :mod:`~prefjudge.experiment.persona_plan`;
- :mod:`~prefjudge.experiment.runner`: calls them in order, resumably, opening each
  distinct model backend once, and writes the manifest;
- :mod:`~prefjudge.experiment.stages`: runs one stage through its use case and keeps
  what it returns (:mod:`~prefjudge.experiment.outcomes`) for the stages after it;
- :mod:`~prefjudge.experiment.resume` and :mod:`~prefjudge.experiment.progress`: the
  journal's resume rule, read-only, and what each stage still asks (plan and run alike);
- :mod:`~prefjudge.experiment.judge_rounds`: ``[judge] strategy = "suggest"``: a judging
  budget spent in rounds on the model pairs ``rank --suggest`` picks;
- :mod:`~prefjudge.experiment.leaderboard`: the merged leaderboard, from the outcomes
  ``run`` holds (a stage not run here: from its files);
- :mod:`~prefjudge.experiment.tables`: the plan, failures, leaderboard and judges tables.
"""
