"""divergence.unwritten: never-written memory gets a value of each run's own and is left out of hashes."""

from __future__ import annotations

import pytest
import torch

from detsim.track.runtime.tensors import tensor_sha256
from detsim.track.divergence.unwritten import canonical, fill, sentinel


@pytest.mark.parametrize("kind", [torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.complex64,
                                   torch.int64, torch.int32, torch.int16])
def test_each_run_fills_with_its_own_value_which_the_dtype_holds_exactly(kind):
    dtype = kind
    a, b = torch.empty(5, dtype=dtype), torch.empty(5, dtype=dtype)
    fill(a, 0)
    fill(b, 1)
    assert sentinel(dtype, 0) != sentinel(dtype, 1)
    assert bool((a == sentinel(dtype, 0)).all()) and bool((b == sentinel(dtype, 1)).all())
    if not dtype.is_complex:
        assert (a < 0).all() and (b > 0).all()  # opposite signs: comparisons against them differ too


def test_narrow_dtypes_have_no_sentinel_and_are_zeroed_in_both_runs():
    for dtype in (torch.bool, torch.uint8, torch.int8):
        t = torch.ones(3, dtype=dtype)
        fill(t, 1)
        assert sentinel(dtype, 1) is None and not t.any()


def test_canonical_hash_leaves_never_written_elements_out_and_keeps_where_they_are():
    a, b = torch.empty(6), torch.empty(6)
    fill(a, 0)
    fill(b, 1)
    a[:4] = b[:4] = torch.arange(4.0)
    (ha, na, written), (hb, nb, _) = canonical(a, 0), canonical(b, 1)
    assert (ha, na) == (hb, nb) == (ha, 2) and written.tolist() == [0.0, 1.0, 2.0, 3.0]
    b[4] = 0.0  # written now, with the value the hash puts in never-written places
    assert canonical(b, 1)[0] != ha
    clean = torch.arange(3.0)
    assert canonical(clean, 0)[:2] == (tensor_sha256(clean), 0)  # nothing never-written: the plain hash
    assert canonical(a, None)[1] == 0  # without a run's fill, nothing is taken for never-written
