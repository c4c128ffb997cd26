"""A small experiment file on the bundled sample, answered by the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path

from pj_cli import SAMPLE_DIR

FAKE_EXPERIMENT = """
[experiment]
name = "fake"
results = "{results}"

[benchmark]
source = "{tasks}"
limit = 4

[augment]
k = 2

[generate]
protocols = ["single"]
ks = "0..1"
max_tokens = 64

[[models]]
name = "model-a"
backend = "openai"
model = "fake-a"
base_url = "{url}"

[[models]]
name = "model-b"
backend = "openai"
model = "fake-b"
base_url = "{url}"

[judge]
method = "monolithic"
backend = "openai"
model = "fake-judge"
base_url = "{url}"

[rank]
alpha = 0.01
bootstrap = 50

[report]
bootstrap = 0
"""


JUDGE_SECTION = """[judge]
method = "monolithic"
backend = "openai"
model = "fake-judge"
base_url = "{url}"

"""


def fake_experiment(folder: Path, url: str, *, judge: bool = True) -> Path:
    """Write ``folder/fake.toml``: 2 models x 4 sample tasks x k in {0, 1}, at ``url``.

    Args:
        folder: A new folder (created); results go to ``folder/results``.
        url: The fake server's base URL (models and judge).
        judge: Keep the ``[judge]`` section (a monolithic judge at ``url``).

    Returns:
        The experiment file.
    """
    folder.mkdir()
    text = FAKE_EXPERIMENT if judge else FAKE_EXPERIMENT.replace(JUDGE_SECTION, "")
    path = folder / "fake.toml"
    path.write_text(text.format(results=folder / "results", tasks=SAMPLE_DIR / "tasks.jsonl",
                                url=url))
    return path
