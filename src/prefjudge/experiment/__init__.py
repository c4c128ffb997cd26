"""One experiment from models to leaderboard: ``prefjudge run EXPERIMENT.toml``.

- :mod:`~prefjudge.experiment.config`: the experiment file, checked (file, line, key);
- :mod:`~prefjudge.experiment.plan`: its stages (augment → generate → score → judge →
  rank → correlate → report → leaderboard), each a stage's use case with typed settings
  writing into one results folder, with the model requests each makes;
- :mod:`~prefjudge.experiment.runner`: calls them in order, resumably, opening each
  distinct model backend once, and writes the manifest;
- :mod:`~prefjudge.experiment.judge_rounds`: ``[judge] strategy = "suggest"``: a judging
  budget spent in rounds on the model pairs ``rank --suggest`` picks;
- :mod:`~prefjudge.experiment.leaderboard`: the merged leaderboard.
"""
