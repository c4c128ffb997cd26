"""Style features of a response: its length in tokens and its markdown elements.

These are the per-response numbers that style-controlled rankings
(:mod:`prefjudge.ranking.style`, ``prefjudge rank --control``) put beside each battle as
``features_a`` / ``features_b``. They follow arena-hard-auto's ``conv_metadata``:

* ``token_len`` — tokens in the whole response, fenced code included, counted by a
  :class:`TokenCounter` (see :func:`tokenizer_for`);
* ``header_count`` — markdown headings (ATX ``# …`` to ``###### …`` and setext
  ``Title`` / ``===``), one per heading, at any depth (inside lists and quotes too);
* ``list_count`` — list items, ordered (``1.``, ``1)``) and unordered (``-``, ``*``,
  ``+``), nested items counted one by one;
* ``bold_count`` — strong-emphasis spans, ``**bold**`` and ``__bold__`` alike.

Deliberate differences from arena-hard-auto:

* Markdown is parsed with markdown-it-py (CommonMark), not matched with regular
  expressions: content of fenced and indented code blocks and of inline code is never
  counted as markdown (arena-hard strips fenced code before its regexes; a parser does
  it for every kind of code), setext headings count as headings, and an unclosed ``**``
  is not bold.
* arena-hard counts tokens with tiktoken's ``gpt-3.5-turbo`` encoding. Here the
  model's own tokenizer is used when its ``tokenizer.json`` is on disk (a directory
  given as the model, or the Hugging Face cache), else :class:`WordPunctCounter`
  (``fallback:words+punct``: runs of word characters and single punctuation marks).
  The tokenizer's name is recorded with every feature record, because token counts
  from different tokenizers are not comparable. Nothing here touches the network.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

FEATURE_NAMES: tuple[str, ...] = ("token_len", "header_count", "list_count", "bold_count")
"""The style features of one response, in arena-hard-auto's order."""
FALLBACK_TOKENIZER = "fallback:words+punct"
"""Name of :class:`WordPunctCounter`, the counter used when no tokenizer is found."""
TOKENIZER_KEY = "tokenizer"
"""Key of the tokenizer name in a :func:`features_record` (the only non-number in it)."""

_WORD_OR_MARK = re.compile(r"\w+|[^\w\s]")
_ORDERED_MARKUP = (".", ")")


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says which tokenizer did it."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens added)."""
        ...


@dataclass(frozen=True)
class WordPunctCounter:
    """The fallback counter: runs of word characters, plus each punctuation mark alone.

    ``"def f(x):"`` is 6 tokens: ``def``, ``f``, ``(``, ``x``, ``)``, ``:``. Subword
    tokenizers split long identifiers into more pieces, so counts run lower than theirs;
    it is only used when no real tokenizer is on disk.
    """

    name: str = FALLBACK_TOKENIZER

    def count(self, text: str) -> int:
        """Number of words and punctuation marks in ``text``."""
        return sum(1 for _ in _WORD_OR_MARK.finditer(text))


class HFTokenCounter:
    """A Hugging Face ``tokenizer.json`` loaded with the ``tokenizers`` package."""

    def __init__(self, path: str | Path, name: str):
        """Load a tokenizer file.

        Args:
            path: The ``tokenizer.json`` file.
            name: Name to record (e.g. ``tokenizer.json:Qwen/Qwen2.5-Coder-7B``).
        """
        from tokenizers import Tokenizer

        self.name = name
        self.path = Path(path)
        self._tokenizer = Tokenizer.from_file(str(path))

    def count(self, text: str) -> int:
        """Number of tokens the tokenizer makes of ``text``, without special tokens."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def _local_tokenizer_file(model: str) -> Path | None:
    """A ``tokenizer.json`` for ``model`` on this machine, or None (never downloads)."""
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".json":
        return path
    if (path / "tokenizer.json").is_file():
        return path / "tokenizer.json"
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(repo_id=model, filename="tokenizer.json")
    except ValueError:  # not a valid repository id (HFValidationError is a ValueError)
        return None
    return Path(cached) if isinstance(cached, str) else None


@lru_cache(maxsize=16)
def tokenizer_for(model: str | None) -> TokenCounter:
    """The token counter for a model's responses, found offline.

    Looks, in order, for ``model`` as a ``tokenizer.json`` file, as a directory holding
    one, and as a repository id in the local Hugging Face cache (through
    ``huggingface_hub.try_to_load_from_cache``, which reads the disk only). A file found
    is loaded with the ``tokenizers`` package. Without a model, a file, or the
    ``tokenizers`` package, the result is :class:`WordPunctCounter`.

    Args:
        model: A model name, repository id or local path, or None.

    Returns:
        A counter whose ``name`` is ``tokenizer.json:<model>`` or
        :data:`FALLBACK_TOKENIZER`.
    """
    if not model or importlib.util.find_spec("tokenizers") is None:
        return WordPunctCounter()
    found = _local_tokenizer_file(model)
    if found is None:
        return WordPunctCounter()
    return HFTokenCounter(found, f"tokenizer.json:{model}")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # the parser is imported when a text is first counted

    return MarkdownIt("commonmark")


def markdown_counts(text: str) -> dict[str, dict[str, int]]:
    """Markdown elements of ``text`` by kind, as arena-hard-auto's ``conv_metadata`` has them.

    Args:
        text: A response.

    Returns:
        ``header_count`` by level (``h1``…``h6``), ``list_count`` by kind (``ordered``,
        ``unordered``) and ``bold_count`` by markup (``**``, ``__``).
    """
    headers = {f"h{level}": 0 for level in range(1, 7)}
    lists = {"ordered": 0, "unordered": 0}
    bold = {"**": 0, "__": 0}
    for token in _parser().parse(text):
        if token.type == "heading_open":
            headers[token.tag] += 1
        elif token.type == "list_item_open":
            lists["ordered" if token.markup in _ORDERED_MARKUP else "unordered"] += 1
        for child in token.children or ():
            if child.type == "strong_open":
                bold[child.markup] = bold.get(child.markup, 0) + 1
    return {"header_count": headers, "list_count": lists, "bold_count": bold}


def response_features(text: str, tokenizer: TokenCounter | None = None) -> dict[str, int]:
    """The four style features of one response.

    Args:
        text: The response.
        tokenizer: Token counter (default: :class:`WordPunctCounter`).

    Returns:
        ``token_len`` (tokens in the whole text, code included), ``header_count``
        (headings), ``list_count`` (list items, nested ones included) and
        ``bold_count`` (``**``/``__`` strong spans); markdown inside code is not counted.
    """
    counter = tokenizer or WordPunctCounter()
    by_kind = markdown_counts(text)
    return {
        "token_len": counter.count(text),
        **{name: sum(kinds.values()) for name, kinds in by_kind.items()},
    }


def features_record(text: str, counter: TokenCounter | None = None) -> dict[str, Any]:
    """Features of one response as a battle row's ``features_a`` or ``features_b``.

    ``prefjudge rank --control`` sums the per-kind objects, as arena-hard-auto does
    with ``conv_metadata``, and reads the tokenizer name to report it.

    Args:
        text: The response.
        counter: Token counter (default: :class:`WordPunctCounter`).

    Returns:
        ``{"token_len": n, "header_count": {"h1": …}, "list_count": {"ordered": …,
        "unordered": …}, "bold_count": {"**": …, "__": …}, "tokenizer": name}``.
    """
    counter = counter or WordPunctCounter()
    return {"token_len": counter.count(text), **markdown_counts(text),
            TOKENIZER_KEY: counter.name}
