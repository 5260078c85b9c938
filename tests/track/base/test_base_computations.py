"""detsim.track.base.computations: golden cases, nanoBragg command lines and callables resolved into
computations of (device, dtype, mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from detsim.track.base.golden import find_case
from detsim.track.base.computations import DTYPES, ComputationError, load_callable, output_tensors, resolve_callable, \
    resolve_case, resolve_command_line

PLANTED = Path(__file__).resolve().parents[2] / "data" / "planted_ops.py"
TINY = "-cell 30 32 34 90 90 90 -default_F 50 -N 3 -detpixels 4 -pixel 4 -distance 40 -oversample 1"


def test_golden_case_ids_resolve_by_unique_prefix():
    assert resolve_case("c02").name == "c02_xds_xbeam_quirk"
    with pytest.raises(ComputationError, match="ambiguous"):
        resolve_case("d0")
    with pytest.raises(ComputationError, match="not a golden case"):
        resolve_case("no_such_case")
    with pytest.raises(ComputationError, match="gradient parameter"):
        resolve_case("c02", grads=("detector.nope",))


def test_a_golden_computation_runs_the_case_in_its_own_folder():
    computation = resolve_case("c02")
    case = find_case("c02")
    assert (computation.kind, computation.spec) == ("golden", "c02")
    image = computation.run("cpu", torch.float32, "eager")["image"]
    assert tuple(image.shape) == case.shape and image.dtype == torch.float32


def test_an_unknown_golden_folder_is_a_computation_error(tmp_path):
    with pytest.raises(ComputationError, match="manifest.json"):
        resolve_case("c02", directory=tmp_path)


def test_a_command_line_computation_returns_the_image_and_the_gradients_asked_for(dtype):
    computation = resolve_command_line("nanoBragg " + TINY, grads=("detector.distance_mm", "crystal.cell[0]"))
    assert computation.name == "cmdline:" + TINY and computation.kind == "nanobragg" and "eager" in computation.modes
    outputs = computation.run("cpu", dtype, "eager")
    assert list(outputs) == ["image", "grad:detector.distance_mm", "grad:crystal.cell[0]"]
    assert outputs["image"].shape == (4, 4) and outputs["image"].dtype == dtype
    assert all(torch.isfinite(g).all() and g.ndim == 0 for name, g in outputs.items() if name != "image")


def test_each_run_prepares_its_setup_anew_as_a_new_process_would(dtype):
    from detsim.rendering.setup import SETUPS

    SETUPS.clear()
    computation = resolve_command_line(TINY)
    first = computation.run("cpu", dtype, "eager")["image"]
    # nothing kept for the next run to find: a second run takes the first's path (diverge compares the two)
    assert len(SETUPS) == 0
    assert torch.equal(computation.run("cpu", dtype, "eager")["image"], first)


@pytest.mark.parametrize("param, message", [
    ("distance", "expected section.field"),
    ("detector.nope", "has no field"),
    ("crystal.cell[7]", "not a tuple of that length"),
])
def test_bad_gradient_parameters_are_refused_before_anything_runs(param, message):
    with pytest.raises(ComputationError, match=message):
        resolve_command_line(TINY, grads=(param,))


def test_a_bad_command_line_is_a_computation_error():
    with pytest.raises(ComputationError, match="cmdline:"):
        resolve_command_line("-cell 1 2")


def test_callables_load_from_files_and_modules_and_report_what_is_wrong():
    assert load_callable(f"{PLANTED}:drifting").__name__ == "drifting"
    assert load_callable("torch:zeros") is torch.zeros
    for spec, message in (("no_colon", "expected module:function"), (f"{PLANTED}:nope", "has no attribute"),
                          ("no_such_module_xyz:f", "cannot import"), ("/no/such/file.py:f", "no file"),
                          (f"{PLANTED}:SIZE", "is not callable")):
        with pytest.raises(ComputationError, match=message):
            load_callable(spec)


def test_a_callable_computation_has_only_the_eager_mode(device, dtype):
    computation = resolve_callable(f"{PLANTED}:crashes_in_float32")
    assert computation.modes == ("eager",) and computation.unavailable(device, "eager") is None
    assert "no 'compiled' mode" in computation.unavailable(device, "compiled")
    if dtype == torch.float64:
        (out,) = computation.run(device, dtype, "eager").values()
        assert out.dtype == dtype and out.device.type == torch.device(device).type


def test_output_tensors_names_a_tensor_a_sequence_and_a_mapping(dtype):
    t = torch.zeros(2, dtype=dtype, requires_grad=True)
    assert list(output_tensors(t)) == ["out"] and not output_tensors(t)["out"].requires_grad
    assert list(output_tensors((t, t))) == ["out0", "out1"]
    assert list(output_tensors({"image": t, 3: t})) == ["image", "3"]
    with pytest.raises(TypeError, match="not a tensor"):
        output_tensors([t, 1.0])
    with pytest.raises(TypeError, match="expected a tensor"):
        output_tensors(1.0)


def test_dtype_names_are_the_two_simulation_dtypes():
    assert DTYPES == {"float64": torch.float64, "float32": torch.float32}
