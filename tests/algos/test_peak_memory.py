"""summary.json's peak memory is per run: a multirun's jobs share one process, so the peak is reset first."""

from rlx.train import peak_rss_mb, reset_peak_memory


def test_reset_peak_memory_forgets_an_earlier_peak():
    block = bytearray(200 * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page: 200 MB resident
    del block
    before = peak_rss_mb()
    reset_peak_memory()
    assert peak_rss_mb() < before - 150
