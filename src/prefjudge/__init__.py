"""prefjudge: judge code-generating LLMs the way their users do.

``prefjudge.__version__`` is looked up in the installed package's metadata when it is first
read, not when the package is imported: reading the metadata costs every command's start
(and the verification process's) tens of milliseconds that most of them never use.
"""

from __future__ import annotations


def _installed_version() -> str:
    """The installed distribution's version (``0.0.0+unknown`` in an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefjudge")
    except PackageNotFoundError:  # running from a source tree without installation
        return "0.0.0+unknown"


def __getattr__(name: str) -> str:
    """Module attributes made on first use: ``__version__`` (then kept as a global)."""
    if name == "__version__":
        value = _installed_version()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
