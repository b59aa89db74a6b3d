"""Session fixtures: the engine test data set as raw answers and as randomized reports."""
import pytest
from engine_data import make_records, write_all


@pytest.fixture(scope="session")
def raw_files(tmp_path_factory):
    return write_all(tmp_path_factory.mktemp("raw"), make_records())


@pytest.fixture(scope="session")
def report_files(tmp_path_factory):
    return write_all(tmp_path_factory.mktemp("reports"), make_records(seed=1, reports=True))
