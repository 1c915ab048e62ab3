"""Every Python source of the project compiles on every supported Python.

Python 3.13 strips docstrings' indentation at compile time, encoding them to UTF-8 on the way:
a docstring holding a lone surrogate (``"\\ud800"`` written in a non-raw docstring, as a test
quoting one may) makes ``compile`` raise ``UnicodeEncodeError`` there, and pytest then cannot
even collect the file. Python 3.11 compiles it, so the check reads the docstrings themselves.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    path
    for folder in ("python", "tests", "benches")
    for path in (ROOT / folder).rglob("*.py")
    if ".venv" not in path.parts
)

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_docstring_holds_a_lone_surrogate(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, _DOCUMENTED):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                doc.encode("utf-8")  # UnicodeEncodeError: write the escape as "\\ud800"
