"""``python -m streamfold``: the ``streamfold`` command."""

from __future__ import annotations

from ._cli.main import main

raise SystemExit(main())
