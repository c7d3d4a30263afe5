"""Lightning callbacks and the logger that keep a run whole: checkpoints and exact resume (checkpoint.py,
resume.py), an appending metrics.csv (csv_logger.py), and a stop for a reward that keeps failing (infra.py)."""
