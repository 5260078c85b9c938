"""compare.run_log: tensor digests (never-written memory left out; the matrix's two hashes), argument text
and call sites, and records through JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from detsim.track.compare.firstdiff import compare_logs
from detsim.track.base.status import Status
from detsim.track.compare.run_log import RunConfig, RunLog, named_tensors, call_site, canonical, fill, \
    output_log, scalar_text, sentinel, storage_key, tensor_info
from detsim.track.compare.tracer import trace
from detsim.track.base.runtime import tensor_sha256

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402


def test_records_survive_json_and_compare_the_same():
    a, b = trace(planted_ops.hidden_counter, label="x"), trace(planted_ops.hidden_counter, label="x")
    reloaded = [RunLog.from_dict(json.loads(r.to_json())) for r in (a, b)]
    assert compare_logs(*reloaded).to_dict() == compare_logs(a, b).to_dict()


def test_a_record_loads_from_its_file(tmp_path):
    rec = trace(planted_ops.unseeded_noise, label="saved")
    (tmp_path / "r.json").write_text(rec.to_json())
    loaded = RunLog.load(tmp_path / "r.json")
    assert loaded == rec and loaded.counts() == rec.counts() == {"op": len(rec.events), "kernel": 0}


def test_tensor_info_is_the_native_hash_with_float64_statistics(device, dtype):
    t = torch.tensor([[1.0, -3.0], [0.5, 2.0]], device=device, dtype=dtype)
    info = tensor_info("x", t)
    assert info.hash == tensor_sha256(t) and info.compare
    assert (info.shape, info.dtype, info.device) == ([2, 2], str(dtype).replace("torch.", ""), str(t.device))
    assert info.stats == {"sum": 0.5, "absmax": 3.0}
    assert tensor_info("x", t.t()).hash == tensor_sha256(t.t().contiguous())  # a view hashes its values
    infinite = tensor_info("y", torch.tensor([float("inf")], device=device, dtype=dtype))
    assert infinite.stats == {"sum": "inf", "absmax": "inf"}  # JSON-safe
    assert (tensor_info("z", t, compare=False, note="n").compare, tensor_info("z", t, note="n").note) == (False, "n")


def test_a_matrix_run_hashes_the_float32_bytes_and_the_native_bytes_and_survives_json(device, dtype):
    image = torch.linspace(0, 1, 12, device=device, dtype=dtype).reshape(3, 4) / 3
    config = RunConfig("t", device, str(dtype).replace("torch.", ""), "eager", 1)
    run = output_log(config, 1, {"image": image}, 0.5)
    (digest,) = run.results
    assert digest.float32 == tensor_sha256(image.to("cpu", torch.float32))
    assert digest.hash == tensor_sha256(image) == tensor_info("image", image).hash  # one digest
    assert (digest.float32 == digest.hash) == (dtype == torch.float32)
    assert digest.shape == [3, 4] and digest.dtype == str(dtype).replace("torch.", "")
    counts = torch.arange(3, device=device)  # integers are hashed as they are, not as float32
    assert output_log(config, 0, {"n": counts}, 0.0).results[0].float32 == tensor_sha256(counts)
    again = RunLog.from_dict(json.loads(run.to_json()))
    assert again.config == config and again.key() == run.key() and again.tensors == {} and run.tensors
    assert again.status is Status.OK and json.loads(run.to_json())["status"] == "ok"


def test_tensors_that_cannot_be_read_are_kept_unhashed():
    meta = tensor_info("m", torch.empty(3, device="meta"))
    assert meta.hash is None and meta.compare is False and "not hashed" in meta.note


def test_scalar_text_is_stable_between_runs():
    assert scalar_text(0.25) == "0.25" and scalar_text([1, 2]) == "[1, 2]"
    assert scalar_text(object()) == "<object>"  # no address
    assert scalar_text(torch.Generator().manual_seed(5)) == "Generator(initial_seed=5)"
    assert scalar_text("x" * 300).endswith("...") and len(scalar_text("x" * 300)) == 200


def test_named_tensors_names_the_tensors_of_an_argument():
    t = torch.zeros(1)
    assert named_tensors("self", t) == [("self", t)]
    assert [name for name, _ in named_tensors("tensors", [t, 3, t])] == ["tensors[0]", "tensors[2]"]
    assert named_tensors("size", [2, 3]) == [] and named_tensors("x", None) == []
    assert [name for name, _ in named_tensors("result", ({"image": t}, [t]))] == ["result[0].image", "result[1][0]"]


def test_storage_key_is_shared_by_views_of_one_buffer():
    t = torch.zeros(4)
    assert storage_key(t[1:]) == storage_key(t) != storage_key(t.clone())


def test_call_site_is_the_caller_outside_torch_and_the_suite():
    line = sys._getframe().f_lineno + 1
    here = call_site()
    assert here.endswith(f"{Path(__file__).name}:{line} in test_call_site_is_the_caller_outside_torch_and_the_suite")


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
