"""Human sizes: "4GiB", "512M", "1.5 GB", plain byte counts."""

import re

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1 << 10,
    "m": 1000 ** 2, "mb": 1000 ** 2, "mib": 1 << 20,
    "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1 << 30,
    "t": 1000 ** 4, "tb": 1000 ** 4, "tib": 1 << 40,
}


def parse_size(s):
    """Returns the number of bytes in ``s`` (an int, or a string such as
    "4GiB", "512M", "1.5GB"). Raises ValueError on anything else."""
    if isinstance(s, bool):
        raise ValueError(f"size {s!r} is not a number of bytes")
    if isinstance(s, (int, float)):
        if s < 0:
            raise ValueError(f"size {s!r} is negative")
        return int(s)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(s))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"size {s!r}: want a byte count such as 4GiB, 512MiB, 100M")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human_bytes(n):
    """Formats a byte count with a binary unit: 1.5 MiB."""
    n = float(n)
    for u in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or u == "TiB":
            return f"{n:.0f} {u}" if u == "B" else f"{n:.1f} {u}"
        n /= 1024
