"""nanoBragg arguments -> configuration: files named by flags, -img/-mask headers, whole-config checks."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import torch

from detsim.fileio import smv
from detsim.commandline.to_config import (
    InputError, build_config, check_inputs, config_from_argv, header_arguments, parse_with_headers,
    read_matrix_file,
)
from detsim.commandline.arguments import ArgumentError
from detsim.commandline.argv_reader import parse_argv
from detsim.model.config import ConfigError, Convention
from detsim.rendering.engine import simulate

SMALL = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "100", "-N", "3", "-detpixels", "32"]


def test_config_from_argv_carries_the_flags_in_the_users_units():
    cfg = config_from_argv(SMALL + ["-distance", "80", "-pixel", "0.2", "-lambda", "1.5", "-xds"])
    assert cfg.crystal.cell == (70.0, 70.0, 70.0, 90.0, 90.0, 90.0)
    assert (cfg.crystal.Na, cfg.crystal.Nb, cfg.crystal.Nc) == (3, 3, 3)
    assert cfg.crystal.default_F == 100.0 and cfg.crystal.hkl is None
    assert (cfg.detector.spixels, cfg.detector.fpixels) == (32, 32)
    assert cfg.detector.pixel_mm == 0.2 and cfg.detector.distance_mm == 80.0
    assert cfg.detector.convention is Convention.XDS
    assert cfg.beam.lambda_A == 1.5
    assert cfg.detector.mask is None


def test_blank_cell_entries_take_nanobraggs_defaults():
    cfg = config_from_argv(["-cell", "70", "0", "0", "0", "90", "0", "-default_F", "1"])
    assert cfg.crystal.cell == (70.0, 70.0, 70.0, 90.0, 90.0, 90.0)


@pytest.mark.parametrize("cell,full", [
    (["100"], (100.0, 100.0, 100.0, 90.0, 90.0, 90.0)),  # cubic: b = c = a, angles 90
    (["100", "120"], (100.0, 120.0, 100.0, 90.0, 90.0, 90.0)),  # c left out is a, not b
    (["100", "120", "130", "80"], (100.0, 120.0, 130.0, 80.0, 90.0, 90.0)),
    (["100", "120", "130", "80", "70"], (100.0, 120.0, 130.0, 80.0, 70.0, 90.0)),
])
def test_a_short_cell_is_completed_as_nanobragg_does(cell, full):
    # nanoBragg.c L1795-1800: "a few random defaults"
    assert config_from_argv(["-cell", *cell, "-default_F", "1"]).crystal.cell == full


def test_a_later_short_cell_keeps_the_earlier_cells_other_values():
    cfg = config_from_argv(["-cell", "100", "120", "130", "80", "70", "60", "-cell", "50", "-default_F", "1"])
    assert cfg.crystal.cell == (50.0, 120.0, 130.0, 80.0, 70.0, 60.0)


def test_a_short_cell_renders_the_image_of_the_full_cell():
    short = simulate(config_from_argv(["-cell", "70"] + SMALL[7:]))
    full = simulate(config_from_argv(SMALL))
    assert torch.equal(short, full)


def test_a_detector_size_alone_is_rounded_to_whole_pixels():
    cfg = config_from_argv(SMALL[:-2] + ["-detsize", "10.04", "-pixel", "0.1"])
    assert (cfg.detector.spixels, cfg.detector.fpixels) == (100, 100)


def test_only_the_first_4096_bytes_of_a_matrix_file_are_read(tmp_path):
    (tmp_path / "A.mat").write_bytes(b"0.01 0 0\n0 0.01 0\n0 0 0.01\n" + b"\0" * 10_000_000)
    assert read_matrix_file(str(tmp_path / "A.mat"))[8] == 0.01
    (tmp_path / "B.mat").write_bytes(b" " * 4090 + b"0.01 0 0\n0 0.01 0\n0 0 0.01\n")
    with pytest.raises(InputError, match="B.mat: a matrix file's 9 numbers must lie within its first 4096 bytes"):
        read_matrix_file(str(tmp_path / "B.mat"))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_matrix_file_that_is_a_device_is_refused_before_it_is_read():
    with pytest.raises(InputError, match="^/dev/zero: is a character device; the matrix file must be a regular file$"):
        read_matrix_file("/dev/zero")


def test_matrix_numbers_are_read_with_cs_grammar(tmp_path):
    (tmp_path / "A.mat").write_text("0x1p-7 0 0\n0 1e-2 0\n\v0 0 +.01\n")
    assert read_matrix_file(str(tmp_path / "A.mat")) == (2**-7, 0.0, 0.0, 0.0, 0.01, 0.0, 0.0, 0.0, 0.01)


def test_matrix_file_gives_the_a_matrix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "A.mat").write_text("0.01 0 0\n0 0.02 0\n0 0 0.03\nextra words are ignored\n")
    cfg = config_from_argv(["-mat", "A.mat", "-default_F", "1"])
    assert cfg.crystal.a_matrix == (0.01, 0.0, 0.0, 0.0, 0.02, 0.0, 0.0, 0.0, 0.03)
    assert read_matrix_file("A.mat") == cfg.crystal.a_matrix


@pytest.mark.parametrize("text,message", [
    ("0.01 0 0\n0 0.01 0\n0 0\n", "needs 9 numbers"),
    ("0.01 0 0\n0 x 0\n0 0 0.01\n", "non-numeric token 'x'"),
    ("0.01 0 0\n0.01 0 0\n0 0 0.01\n", "singular"),
    ("0.01 0 0\n0 inf 0\n0 0 0.01\n", "non-finite"),
    ("0.01 0 0\n0 1_0 0\n0 0 0.01\n", "non-numeric token '1_0'"),  # fscanf reads 1, Python's float() 10
    ("0.01 0 0\n0 ０.０１ 0\n0 0 0.01\n", "non-numeric token '０.０１'"),
    ("0.01 0 0\n0\u00a00.01 0\n0 0 0.01\n", "non-numeric token '0.xa00.01'"),  # no C space
], ids=["short", "garbage", "singular", "non-finite", "underscore", "full-width", "no-break-space"])
def test_bad_matrix_files_raise_input_error_naming_the_file(text, message, tmp_path):
    path = tmp_path / "bad.mat"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        read_matrix_file(str(path))
    assert str(path) in str(info.value)


@pytest.mark.parametrize("flag", ["-img", "-mask", "-stol", "-mat"])
def test_a_missing_input_file_raises_input_error(flag, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="missing.file"):
        config_from_argv(SMALL + [flag, "missing.file"])


@pytest.mark.parametrize("flag,name,message", [
    ("-img", "adir", "-img adir: is a directory, not an SMV image"),
    ("-mask", "fifo", "-mask fifo: is a FIFO (named pipe), not an SMV image"),
    ("-img", "empty.img", "-img empty.img: is an empty file, not an SMV image"),
    ("-img", "/dev/zero", "-img /dev/zero: is a character device, not an SMV image"),
    ("-mask", "/dev/null", "-mask /dev/null: is a character device, not an SMV image"),
    ("-stol", "adir", "-stol adir: is a directory, not a file"),
])
def test_check_inputs_says_what_a_path_that_is_no_image_is(flag, name, message, tmp_path, monkeypatch):
    # they were all reported as "no such file"
    if name.startswith("/dev/") and not os.path.exists(name):
        pytest.skip(f"needs {name}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "empty.img").write_bytes(b"")
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        check_inputs(parse_argv(SMALL + [flag, name]))


def test_an_empty_stol_file_is_accepted_as_nanobragg_never_reads_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stol.txt").write_bytes(b"")
    check_inputs(parse_argv(SMALL + ["-stol", "stol.txt"]))


def test_check_inputs_names_the_flag_of_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="^-mask nomask.img: no such file$"):
        check_inputs(parse_argv(SMALL + ["-mask", "nomask.img"]))


def _smv(path, shape, **header):
    smv.write_smv(path, np.ones(shape, dtype=np.uint16), header)


def test_img_header_values_apply_before_the_flags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _smv(tmp_path / "in.img", (40, 50), PIXEL_SIZE=0.2, DISTANCE=120, WAVELENGTH=1.7,
         BEAM_CENTER_X=3.5, BEAM_CENTER_Y=4.5)
    argv = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "1", "-img", "in.img"]
    cfg = config_from_argv(argv)
    assert (cfg.detector.spixels, cfg.detector.fpixels) == (40, 50)  # (slow, fast) from the image
    assert cfg.detector.pixel_mm == 0.2
    assert cfg.detector.distance_mm == 120.0 and cfg.beam.lambda_A == 1.7
    assert (cfg.detector.xbeam_mm, cfg.detector.ybeam_mm) == (3.5, 4.5)
    assert cfg.detector.mask is None
    flagged = config_from_argv(argv + ["-distance", "90", "-lambda", "1.1"])
    assert flagged.detector.distance_mm == 90.0 and flagged.beam.lambda_A == 1.1  # a flag wins over the header


def test_mask_header_counts_y_from_the_other_edge_and_the_mask_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mask = np.ones((20, 30), dtype=np.uint16)
    mask[2, 3] = 0
    smv.write_smv(tmp_path / "mask.img", mask, {"PIXEL_SIZE": 0.1, "BEAM_CENTER_Y": 0.5})
    args, kept = header_arguments(None, "mask.img")
    assert np.array_equal(kept, mask)
    assert args.ybeam_mm == pytest.approx(20 * 0.1 - 0.5)
    parsed, kept_again = parse_with_headers(SMALL[:-2] + ["-mask", "mask.img"])
    assert (parsed.spixels, parsed.fpixels) == (20, 30) and np.array_equal(kept_again, mask)
    cfg = config_from_argv(SMALL[:-2] + ["-mask", "mask.img"])
    assert np.array_equal(cfg.detector.mask, mask)


@pytest.mark.parametrize("text,c_reads", [("far", "0.0"), ("1_00", "1.0"), ("80mm", "80.0")])
def test_a_header_value_that_is_not_wholly_a_number_is_an_input_error(text, c_reads, tmp_path, monkeypatch):
    # nanoBragg reads header values with atof: a prefix; Python's float() would read 1_00 as 100
    monkeypatch.chdir(tmp_path)
    _smv(tmp_path / "in.img", (8, 8), DISTANCE=text)
    message = f"-img in.img: header DISTANCE='{text}' is not a number (nanoBragg would read {c_reads})"
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        config_from_argv(SMALL + ["-img", "in.img"])


def test_header_values_are_read_with_cs_grammar(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _smv(tmp_path / "in.img", (8, 8), DISTANCE="0x1p6", WAVELENGTH=" 1.5e0")
    cfg = config_from_argv(SMALL[:-2] + ["-img", "in.img"])
    assert cfg.detector.distance_mm == 64.0 and cfg.beam.lambda_A == 1.5


def test_an_unreadable_header_image_is_an_input_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.img").write_bytes(b"not an SMV file")
    with pytest.raises(InputError, match="^-img "):
        config_from_argv(SMALL + ["-img", "in.img"])


@pytest.mark.parametrize("argv,message", [
    (["-default_F", "1"], "a unit cell"),
    (["-cell", "70", "70", "70", "90", "90", "90"], "no structure factors"),
    (SMALL + ["-pixel", "0"], "-pixel must be > 0"),
    (SMALL + ["-distance", "-5"], "-distance must be > 0"),
    (SMALL + ["-detsize", "0"], "-detsize_f must be > 0"),
], ids=["no-cell", "no-F", "pixel", "distance", "detsize"])
def test_build_config_rejects_what_only_makes_sense_as_a_whole(argv, message):
    with pytest.raises(ConfigError, match=message):
        build_config(parse_argv(argv))


def test_build_config_rejects_a_negative_pixel_count():
    args = parse_argv(SMALL)
    args.fpixels = -3
    with pytest.raises(ConfigError, match="-detpixels_f must be > 0, got -3"):
        build_config(args)


@pytest.mark.parametrize("argv,message", [
    (["-mosaic_dom", "0"], "-mosaic_dom must be >= 1, got 0"),
    (["-mosaic_dom", "-4", "-mosaic", "1"], "-mosaic_dom must be >= 1, got -4"),
    (["-oversample", "-3"], "-oversample must be >= 1"),
    (["-detpixels", "0"], "-detpixels must be >= 1, got 0"),
    (["-detpixels_f", "0"], "-detpixels_f must be >= 1, got 0"),
    (["-detpixels_y", "-2"], "-detpixels_y must be >= 1, got -2"),
    (["-N", "-3"], "-N must be >= 0"),
], ids=["mosaic_dom-without-mosaic", "mosaic_dom-negative", "oversample", "detpixels", "detpixels_f",
        "detpixels_y", "N"])
def test_counts_the_readme_calls_errors_are_errors_naming_the_typed_flag(argv, message):
    with pytest.raises((ArgumentError, ConfigError), match=f"^{message}"):
        build_config(parse_argv(SMALL + argv))


def test_oversample_zero_still_means_automatic():
    assert build_config(parse_argv(SMALL + ["-oversample", "0"])).sampling.oversample is None


@pytest.mark.parametrize("key,value,fragment", [
    ("PIXEL_SIZE", 0, "header PIXEL_SIZE=0 must be > 0"),
    ("DISTANCE", -5, "header DISTANCE=-5 must be > 0"),
    ("WAVELENGTH", 0, "header WAVELENGTH=0 must be > 0"),
    ("BEAM_CENTER_X", "nan", "header BEAM_CENTER_X='nan' is not a finite number"),
    ("CLOSE_DISTANCE", "inf", "header CLOSE_DISTANCE='inf' is not a finite number"),
])
def test_a_bad_header_value_is_named_by_its_header_key(key, value, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _smv(tmp_path / "in.img", (8, 8), **{key: value})
    with pytest.raises(InputError, match=f"^-img in.img: {re.escape(fragment)}"):
        config_from_argv(SMALL + ["-img", "in.img"])


def test_one_command_line_is_one_configuration_unless_the_misset_is_drawn_from_the_clock(monkeypatch):
    from detsim.commandline import to_config
    clock = iter(range(100, 200))
    monkeypatch.setattr(to_config, "time_seed", lambda: next(clock))
    assert config_from_argv(SMALL + ["-misset", "10", "20", "30"]) == config_from_argv(SMALL + ["-misset", "10", "20", "30"])
    assert config_from_argv(SMALL) == config_from_argv(SMALL)
    drawn = [config_from_argv(SMALL + ["-misset", "random"]).crystal.misset_seed for _ in range(2)]
    assert drawn[0] != drawn[1]
