"""Session fixtures: the engine test data set as raw answers and as randomized reports."""
import pytest
from engine_data import make_counted, make_rankings, make_records, write_all, write_rankings


@pytest.fixture(scope="session")
def raw_files(tmp_path_factory):
    return write_all(tmp_path_factory.mktemp("raw"), make_records())


@pytest.fixture(scope="session")
def report_files(tmp_path_factory):
    return write_all(tmp_path_factory.mktemp("reports"), make_records(seed=1, reports=True))


@pytest.fixture(scope="session")
def ranking_files(tmp_path_factory):
    orders, counts = make_rankings()
    return write_rankings(tmp_path_factory.mktemp("rankings"), orders, counts)


@pytest.fixture(scope="session", params=["raw", "reports"])
def counted_files(request, tmp_path_factory):
    """``(counted, rows)``: files with a count column in every format, and the same comparisons one per row."""
    counted, rows = make_counted(make_records(seed=1, reports=True) if request.param == "reports" else make_records())
    return (write_all(tmp_path_factory.mktemp(f"counted_{request.param}"), counted),
            write_all(tmp_path_factory.mktemp(f"rows_{request.param}"), rows))
