"""Shape-grid options shared by `cute-dsa bench` and `cute-dsa tune`: comma lists of ints."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple


def add_grid_args(parser, **defaults: Sequence[int]) -> None:
    """One `--NAME 1,2,3` option per keyword, its default list shown in the help."""
    for name, values in defaults.items():
        parser.add_argument(f"--{name}", help=f"comma list, default {','.join(map(str, values))}")


def int_list(text: Optional[str], default: Sequence[int]) -> Tuple[int, ...]:
    if not text:
        return tuple(default)
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"expected a comma list of integers, got {text!r}") from None
