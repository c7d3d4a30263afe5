"""python -m rlx.report <sweep_dir> [...]: (re)write report.md, report.csv and the PNGs of finished sweeps."""

from __future__ import annotations

import sys

from rlx.report import write_report


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    for sweep_dir in argv:
        print(write_report(sweep_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
