"""Response headers: a read-only, case-insensitive mapping that keeps repeated names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["Headers"]


class Headers(Mapping[str, str]):
    """Names are looked up in any case; a repeated name's values join with ``", "`` (as httpx
    does), each one kept in :meth:`multi_items` / :meth:`get_list`."""

    __slots__ = ("_items", "_joined")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = items
        joined: dict[str, str] = {}
        for name, value in items:
            key = name.lower()
            joined[key] = f"{joined[key]}, {value}" if key in joined else value
        self._joined = joined

    def __getitem__(self, name: str) -> str:
        return self._joined[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._joined

    def __iter__(self) -> Iterator[str]:
        return iter(self._joined)

    def __len__(self) -> int:
        return len(self._joined)

    def get_list(self, name: str) -> list[str]:
        key = name.lower()
        return [value for n, value in self._items if n.lower() == key]

    def multi_items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"
