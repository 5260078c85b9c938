"""divergence.records: tensor fingerprints, argument text and call sites, and records through JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from detsim.track.runtime.tensors import tensor_sha256
from detsim.track.divergence.firstdiff import compare_records
from detsim.track.divergence.recorder import record
from detsim.track.divergence.events import Record, argument_tensors, call_site, scalar_text, storage_key, \
    tensor_info

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402


def test_records_survive_json_and_compare_the_same():
    a, b = record(planted_ops.hidden_counter, label="x"), record(planted_ops.hidden_counter, label="x")
    reloaded = [Record.from_dict(json.loads(r.to_json())) for r in (a, b)]
    assert compare_records(*reloaded).to_dict() == compare_records(a, b).to_dict()


def test_a_record_loads_from_its_file(tmp_path):
    rec = record(planted_ops.unseeded_noise, label="saved")
    (tmp_path / "r.json").write_text(rec.to_json())
    loaded = Record.load(tmp_path / "r.json")
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


def test_tensors_that_cannot_be_read_are_kept_unhashed():
    meta = tensor_info("m", torch.empty(3, device="meta"))
    assert meta.hash is None and meta.compare is False and "not hashed" in meta.note


def test_scalar_text_is_stable_between_runs():
    assert scalar_text(0.25) == "0.25" and scalar_text([1, 2]) == "[1, 2]"
    assert scalar_text(object()) == "<object>"  # no address
    assert scalar_text(torch.Generator().manual_seed(5)) == "Generator(initial_seed=5)"
    assert scalar_text("x" * 300).endswith("...") and len(scalar_text("x" * 300)) == 200


def test_argument_tensors_names_the_tensors_of_an_argument():
    t = torch.zeros(1)
    assert argument_tensors("self", t) == [("self", t)]
    assert [name for name, _ in argument_tensors("tensors", [t, 3, t])] == ["tensors[0]", "tensors[2]"]
    assert argument_tensors("size", [2, 3]) == [] and argument_tensors("x", None) == []


def test_storage_key_is_shared_by_views_of_one_buffer():
    t = torch.zeros(4)
    assert storage_key(t[1:]) == storage_key(t) != storage_key(t.clone())


def test_call_site_is_the_caller_outside_torch_and_the_suite():
    line = sys._getframe().f_lineno + 1
    here = call_site()
    assert here.endswith(f"test_divergence_events.py:{line} in test_call_site_is_the_caller_outside_torch_and_the_suite")
