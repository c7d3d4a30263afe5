import pytest

from tests.e2e.readme import Artifacts


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory, test_cache):
    """Shrunk command runs shared by the e2e tests (each command runs once per session)."""
    artifacts = Artifacts(tmp_path_factory.mktemp("e2e-runs"), test_cache)
    yield artifacts
    artifacts.close()
