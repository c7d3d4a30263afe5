"""Sweep comparison: report.md + report.csv + PNG curves next to the runs, and a W&B Report when it can."""

from rlx.report.report import write_report

__all__ = ["write_report"]
