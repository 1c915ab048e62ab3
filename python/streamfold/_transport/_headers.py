"""Response headers: a read-only, case-insensitive mapping that keeps repeated names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["Headers"]


class Headers(Mapping[str, str]):
    """Names are looked up in any case; a repeated name's values join with ``", "`` (as httpx
    does), each one kept in :meth:`multi_items` / :meth:`get_list`.

    An open stream keeps its headers as long as it is read, so they are held once: the joined
    mapping, which is the items themselves unless a name repeats or is not lower case (HTTP/2
    sends them lower-cased, and the core gives HTTP/1.1's so); only then are the items kept
    beside it."""

    __slots__ = ("_items", "_joined")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        joined: dict[str, str] = {}
        own = False
        for name, value in items:
            key = name.lower()
            if key in joined:
                joined[key] = f"{joined[key]}, {value}"
                own = True
            else:
                joined[key] = value
                own = own or key != name
        self._joined = joined
        self._items = items if own else None

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
        if self._items is None:
            value = self._joined.get(key)
            return [] if value is None else [value]
        return [value for n, value in self._items if n.lower() == key]

    def multi_items(self) -> list[tuple[str, str]]:
        if self._items is None:
            return list(self._joined.items())
        return list(self._items)

    def __repr__(self) -> str:
        return f"Headers({self.multi_items()!r})"
