"""R's serialization format, read without R: enough of it for data sets (Jane Austen's novels, course.corpora).

read_r_serialized(data)   bytes of saveRDS / a lazy-load database entry (XDR format) -> Python values
"""

from __future__ import annotations

import struct


def read_r_serialized(data: bytes):
    """Decode R's XDR serialization (what saveRDS and lazy-load databases hold) into Python values.

    Enough for data sets: NULL -> None, character/integer/logical/double vectors -> lists, lists -> lists, or
    dicts when they carry names. Raises ValueError on anything else (functions, environments' contents, ...).
    """
    if data[:2] != b"X\n":
        raise ValueError("not an R serialization in XDR format (expected it to start with 'X\\n')")
    pos = 2

    def ints(n: int):
        nonlocal pos
        values = struct.unpack_from(f">{n}i", data, pos)
        pos += 4 * n
        return values

    version = ints(3)[0]
    if version == 3:  # version 3 adds the writer's native encoding
        pos += 4 + ints(1)[0]
    symbols: list[str] = []

    def item():
        nonlocal pos
        (flags,) = ints(1)
        kind, has_attributes, has_tag = _unpack_flags(flags)
        if kind in (254, 242, 253, 251):  # NULL, empty/global/base environment
            return None
        if kind == 255:  # a reference to a symbol read earlier
            return symbols[(flags >> 8 or ints(1)[0]) - 1]
        if kind == 1:  # a symbol: its name follows
            symbols.append(item())
            return symbols[-1]
        if kind == 2:  # a pairlist (how attributes are stored): {tag: value}
            pairs = {}
            while kind == 2:
                if has_attributes:
                    item()
                tag = item() if has_tag else None
                pairs[tag] = item()
                (flags,) = ints(1)
                kind, has_attributes, has_tag = _unpack_flags(flags)
            if kind != 254:
                raise ValueError(f"a pairlist ends in R type {kind}, not NULL")
            return pairs
        if kind == 9:  # one string; length -1 is NA
            (n,) = ints(1)
            if n == -1:
                return None
            pos += n
            return data[pos - n : pos].decode("utf-8", "replace")
        (n,) = ints(1)
        if kind in (10, 13):  # logical, integer
            value = list(ints(n))
        elif kind == 14:  # double
            value = list(struct.unpack_from(f">{n}d", data, pos))
            pos += 8 * n
        elif kind in (16, 19):  # character vector, list
            value = [item() for _ in range(n)]
        else:
            raise ValueError(f"R type {kind} is not supported (only data: vectors, lists, strings)")
        if has_attributes:
            attributes = item() or {}
            if kind == 19 and "names" in attributes:
                value = dict(zip(attributes["names"], value))
        return value

    return item()


def _unpack_flags(flags: int) -> tuple[int, int, int]:
    """An item's header: its R type, whether attributes follow, whether a tag follows."""
    return flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
