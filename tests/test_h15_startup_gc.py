"""Start-up imports hold the cyclic collector off, and freeze only in prefjudge's own process.

Issue 44 (commands that start at once): :func:`prefjudge.lazy.heavy_imports` turns the
collector off around a command's imports and the model client's, and, where the command
line runs as a program (:func:`prefjudge.lazy.own_process`), freezes what they made.
"""

from __future__ import annotations

import gc
import subprocess
import sys

from click.testing import CliRunner

from prefjudge import lazy
from prefjudge.cli import main


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


def test_the_collector_is_off_in_the_block_and_on_after_it() -> None:
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    with lazy.heavy_imports():
        assert not gc.isenabled()
        import json  # noqa: F401
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # not prefjudge's own process: nothing frozen


def test_a_collector_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with lazy.heavy_imports():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_own_process_freezes_what_the_block_imported_once() -> None:
    out = _run(
        "import gc\n"
        "from prefjudge import lazy\n"
        "lazy.own_process()\n"
        "before = gc.get_freeze_count()\n"
        "with lazy.heavy_imports('decimal'):\n"
        "    import decimal\n"
        "after = gc.get_freeze_count()\n"
        "with lazy.heavy_imports('decimal'):  # loaded already: nothing to do\n"
        "    import decimal\n"
        "print(before == 0, after > 0, gc.get_freeze_count() == after, gc.isenabled())\n"
    )
    assert out == "True True True True"


def test_the_program_owns_its_process_a_test_runner_does_not() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and "prefjudge, version" in result.output
    assert lazy._START_UP["freeze"] is False
    out = _run(
        "import sys\n"
        "from prefjudge import lazy\n"
        "from prefjudge.cli import main\n"
        "sys.argv = ['prefjudge', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('frozen' if lazy._START_UP['freeze'] else 'left as it is')\n"
    )
    assert out.splitlines()[-1] == "frozen"
