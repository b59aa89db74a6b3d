"""privrank.data.arrow_compute calls Arrow's compute core without importing pyarrow.compute: each of its
functions answers exactly as pyarrow.compute's function of the same name does."""
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from privrank.data import arrow_compute

TEXT = pa.array([" b", "A ", None, "b", "c", "", "na"])
NUMBERS = pa.array([3, None, 1, 7, 1], type=pa.int64())

CALLS = {
    "cast": (pa.array(["1", "2.5", None]), pa.float64()),
    "take": (TEXT, pa.array([4, 0, 2])),
    "filter": (NUMBERS, pa.array([True, False, True, None, True])),
    "is_null": (TEXT,),
    "is_in": (TEXT, pa.array(["b", "c"])),
    "index_in": (TEXT, pa.array(["c", "b"])),
    "fill_null": (NUMBERS, 0),
    "min_max": (NUMBERS,),
    "unique": (NUMBERS,),
    "dictionary_encode": (TEXT,),
    "array_sort_indices": (NUMBERS,),
    "utf8_lower": (TEXT,),
    "utf8_length": (TEXT,),
    "utf8_trim_whitespace": (TEXT,),
}


def test_every_function_is_tested():
    public = {name for name in vars(arrow_compute) if not name.startswith("_") and callable(vars(arrow_compute)[name])}
    assert public - {"annotations"} == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_function_answers_as_pyarrow_compute(name):
    args = CALLS[name]
    assert getattr(arrow_compute, name)(*args).equals(getattr(pc, name)(*args))


def test_an_unsafe_cast_is_refused_as_pyarrow_compute_refuses_it():
    with pytest.raises(pa.ArrowInvalid):
        arrow_compute.cast(pa.array(["1.5"]), pa.int64())
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(pa.array(["1.5"]), pa.int64())
