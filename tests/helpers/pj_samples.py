"""Which real benchmark tasks the sandbox tests sample from, independent of the test extras.

A seeded sample drawn from "every task whose libraries are installed" changes whenever an
install adds a library (scikit-learn came with the style-control reference test, and moved
six BigCodeBench tasks with library-version breakage into the sample). The sandbox tests
therefore draw from tasks whose third-party libraries are all in a fixed set: the ones
prefjudge's own install and vLLM bring.
"""

from __future__ import annotations

import sys

from prefjudge.records import Task

SAMPLE_LIBRARIES = frozenset({
    "PIL", "blake3", "cryptography", "cv2", "dateutil", "matplotlib", "mpl_toolkits",
    "numpy", "pandas", "psutil", "regex", "requests", "scipy", "sympy", "yaml",
})


def in_sample_libraries(task: Task) -> bool:
    """Whether every library the task needs is the standard library's or in the fixed set."""
    return all(lib.split(".")[0] in sys.stdlib_module_names or lib.split(".")[0]
               in SAMPLE_LIBRARIES for lib in task.libs)
