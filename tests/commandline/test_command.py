"""The detsim command: nanoBragg's output files, and one-line errors with exit code 2 for bad input."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from _tolerances import FLOAT32_VS_FLOAT64_MIN_R
from conftest import CASES, GOLDEN_DIR
from detsim.commandline.command import main
from detsim.fileio import images as io, smv
from helpers import pearson_r

SMALL = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "100", "-N", "3", "-detpixels", "32",
         "-noprogress"]


def _copy_case(case_id: str, tmp_path):
    src = GOLDEN_DIR / case_id
    for name in CASES[case_id].get("input_files", []):
        shutil.copy(src / name, tmp_path / name)
    return src


@pytest.mark.parametrize("case_id,files", [
    ("s01_noise_intfile_scale", ["int.img", "noise.img"]),
    ("s02_intfile_autoscale_adc", ["int.img"]),
])
def test_smv_outputs_are_byte_identical_to_nanobragg(case_id, files, tmp_path, monkeypatch, capsys):
    src = _copy_case(case_id, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(CASES[case_id]["args"]) == 0
    for name in files:
        assert (tmp_path / name).read_bytes() == (src / name).read_bytes(), name
    header, _ = smv.read_smv(tmp_path / files[0])
    assert header["SIZE1"] == "128"
    assert "max_I" in capsys.readouterr().out


def test_noise_image_is_reproducible_with_seed_and_changes_without(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = SMALL + ["-nopgm", "-noisefile"]
    assert main(args + ["a.img", "-seed", "5"]) == 0
    assert main(args + ["b.img", "-seed", "5"]) == 0
    assert main(args + ["c.img", "-seed", "6"]) == 0
    a, b, c = (smv.read_smv(tmp_path / n)[1] for n in ("a.img", "b.img", "c.img"))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_default_outputs_and_pgm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(SMALL + ["-seed", "1"]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"floatimage.bin", "intimage.img", "image.pgm",
                                                    "noiseimage.img"}
    pgm = (tmp_path / "image.pgm").read_bytes()
    assert pgm.startswith(b"P5\n32 32\n# pixels scaled by ")
    assert len(pgm.split(b"\n255\n", 1)[1]) == 32 * 32


def test_float32_and_chunking_flags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(SMALL + ["-nonoise", "-nopgm", "-floatfile", "a.bin"]) == 0
    assert main(SMALL + ["-nonoise", "-nopgm", "-floatfile", "b.bin", "-dtype", "float32",
                         "-chunk_pixels", "100"]) == 0
    a = io.read_float_image(tmp_path / "a.bin", (32, 32))
    b = io.read_float_image(tmp_path / "b.bin", (32, 32))
    r = pearson_r(a, b)
    assert r is not None and r > FLOAT32_VS_FLOAT64_MIN_R


def test_the_float_image_is_the_same_bytes_on_one_thread_and_on_two(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = SMALL + ["-nonoise", "-nopgm", "-chunk_pixels", "100"]  # 11 chunks: both threads get several
    assert main(argv + ["-threads", "1", "-floatfile", "one.bin"]) == 0
    assert main(argv + ["-threads", "2", "-floatfile", "two.bin"]) == 0
    assert (tmp_path / "one.bin").read_bytes() == (tmp_path / "two.bin").read_bytes()


def test_mask_skips_pixels_and_header_sets_geometry(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mask = np.ones((32, 32), dtype=np.uint16)
    mask[3:5, 7:9] = 0
    smv.write_smv(tmp_path / "mask.img", mask, {"PIXEL_SIZE": 0.1, "DISTANCE": 80})
    assert main(SMALL + ["-nonoise", "-nopgm", "-mask", "mask.img", "-floatfile", "m.bin"]) == 0
    assert main(SMALL + ["-nonoise", "-nopgm", "-distance", "80", "-floatfile", "p.bin"]) == 0
    masked = io.read_float_image(tmp_path / "m.bin", (32, 32))
    plain = io.read_float_image(tmp_path / "p.bin", (32, 32))
    assert (masked[3:5, 7:9] == 0).all() and (plain[3:5, 7:9] > 0).all()
    keep = mask.astype(bool)
    assert np.array_equal(masked[keep], plain[keep])  # header DISTANCE=80 was applied


def _write(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return name


BAD_INPUTS = [
    (["-mat", "missing.mat", "-default_F", "1"], "missing.mat"),
    (["-mat", "short.mat", "-default_F", "1"], "short.mat"),
    (["-mat", "garbage.mat", "-default_F", "1"], "garbage.mat"),
    (["-mat", "singular.mat", "-default_F", "1"], "singular.mat"),
    (["-cell", "100", "100", "100", "60", "60", "150", "-default_F", "1"], "-cell"),
    (["-cell", "100", "100", "100", "90", "90", "90"], "-default_F"),
    (SMALL + ["-pixel", "0"], "-pixel"),
    (SMALL + ["-pixel", "-0.1"], "-pixel"),
    (SMALL + ["-distance", "0"], "-distance"),
    (SMALL + ["-distance", "-5"], "-distance"),
    (SMALL + ["-detsize", "0"], "-detsize"),
    (SMALL + ["-distance", "nan"], "-distance"),
    (SMALL + ["-lambda", "nan"], "-lambda"),
    (SMALL + ["-cell", "70", "nan", "70", "90", "90", "90"], "-cell"),
    (["-cell", "-default_F", "1"], "-cell expects at least 1 value (a [b c al be ga]), got 0 before -default_F"),
    (SMALL + ["-cell", "100", "100", "100", "-90"], "-cell reads no value that starts with '-'"),
    (SMALL + ["-misset", "10", "20"], "-misset expects 3 values (x y z | random), got 2"),
    (SMALL + ["-distance", "1_00"], "-distance expects a number, got '1_00'"),  # nanoBragg reads 1
    (SMALL + ["-N", "1_0"], "-N expects an integer, got '1_0'"),
    (SMALL + ["-detpixels", "3_2"], "-detpixels expects an integer, got '3_2'"),
    (SMALL + ["-distance", "１００"], "-distance expects a number, got '１００'"),  # nanoBragg reads 0
    (SMALL + ["-distance", "١٠٠"], "-distance expects a number, got '١٠٠'"),
    (SMALL + ["-bogus_flag", "1"], "-bogus_flag"),
    (SMALL + ["-roi", "0", "40", "0", "10"], "-roi"),
    (SMALL + ["-roi", "-1", "10", "0", "10"], "-roi"),
    (SMALL + ["-hkl", "bad.hkl"], "bad.hkl"),
    (SMALL + ["-sourcefile", "empty.txt"], "empty.txt"),
    (SMALL + ["-mosaic", "1", "-mosaic_dom", "0"], "-mosaic_dom"),
    (SMALL + ["-mosaic_dom", "0"], "-mosaic_dom"),
    (SMALL + ["-phisteps", "-3"], "-phisteps"),
    (SMALL + ["-N", "-2"], "-N must"),
    (SMALL + ["-Na", "-2"], "-Na"),
    (SMALL + ["-mask", "nomask.img"], "nomask.img"),
    (SMALL + ["-mode", "fast"], "-mode"),
    (SMALL + ["-chunk_pixels", "-5"], "-chunk_pixels"),
    (SMALL + ["-chunk_pixels", "0"], "-chunk_pixels"),
    (SMALL + ["-threads", "0"], "-threads"),
    (SMALL + ["-threads", "100000"], "-threads"),
    (SMALL + ["-nanobragg_threads", "0"], "-nanobragg_threads"),
    (SMALL + ["-seed", "2147483648"], "-seed"),
    (SMALL + ["-seed", "-2147483648"], "-seed"),
    (SMALL + ["-mosaic", "1", "-mosaic_dom", "2", "-mosaic_seed", "99999999999"], "-mosaic_seed"),
    (SMALL + ["-misset_seed", "2147483648", "-misset", "random"], "-misset_seed"),
    (SMALL + ["-device", "cuda:99"] if not __import__("torch").cuda.is_available() else SMALL + ["-device", "bogus"],
     "-device"),
]


@pytest.mark.parametrize("argv,named", BAD_INPUTS, ids=[b[1] + f"-{i}" for i, b in enumerate(BAD_INPUTS)])
def test_bad_input_one_line_error_exit_2_nothing_written(argv, named, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "short.mat", "0.01 0 0\n0 0.01 0\n0 0\n")
    _write(tmp_path, "garbage.mat", "0.01 0 0\n0 x 0\n0 0 0.01\n")
    _write(tmp_path, "singular.mat", "0.01 0 0\n0.01 0 0\n0 0 0.01\n")
    _write(tmp_path, "bad.hkl", "1 2 3 100\n1 2 x 5\n")
    _write(tmp_path, "empty.txt", "")
    before = {p.name for p in tmp_path.iterdir()}
    assert main(argv + ["-floatfile", "out.bin"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("detsim: error: ") and err.count("\n") == 1, err
    assert named in err
    assert {p.name for p in tmp_path.iterdir()} == before


def test_trace_pixel_prints_trace_and_writes_no_image(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(SMALL + ["-trace_pixel", "16", "17", "--trace-json", "t.json"]) == 0
    out = capsys.readouterr().out
    assert "TRACE_PY: pixel 16 17" in out and "TRACE_PY: pixel_value" in out
    assert {p.name for p in tmp_path.iterdir()} == {"t.json"}
    assert main(SMALL + ["--trace-json", "t2.json"]) == 2


@pytest.mark.parametrize("outputs,named", [
    (["-floatfile", "same.img", "-intfile", "same.img"], "same.img"),
    (["-floatfile", "./same.img", "-noisefile", "same.img"], "same.img"),
    (["-intfile", "link.img", "-pgmfile", "target.img"], "target.img"),
    (["-intfile", "nodir/x.img"], "nodir/x.img"),
    (["-pgmfile", "adir"], "adir"),
    (["-floatfile", ""], "-floatfile"),
    (["-noisefile", "locked.img"], "locked.img"),
    (["-floatfile", "target.img/"], "-floatfile target.img/: names a directory"),  # it replaced target.img
    (["-floatfile", "newdir/"], "-floatfile newdir/: names a directory"),  # it created a file newdir
])
def test_bad_output_paths_are_refused_before_rendering(outputs, named, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "target.img").write_bytes(b"target")
    (tmp_path / "link.img").symlink_to("target.img")
    (tmp_path / "locked.img").write_bytes(b"locked")
    (tmp_path / "locked.img").chmod(0o444)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    calls = []
    monkeypatch.setattr("detsim.rendering.engine.render", lambda *a, **k: calls.append(1))
    assert main(SMALL + ["-seed", "1"] + outputs) == 2
    err = capsys.readouterr().err
    assert err.startswith("detsim: error: ") and err.count("\n") == 1 and named in err, err
    assert calls == []  # refused before the render
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "link.img", "locked.img", "target.img"]


def _input_files(tmp_path):
    (tmp_path / "in.hkl").write_text("0 0 0 10\n1 1 1 20\n")
    (tmp_path / "A.mat").write_text("0.01 0 0\n0 0.01 0\n0 0 0.01\n")
    smv.write_smv(tmp_path / "in.img", np.ones((32, 32), dtype=np.uint16), {"PIXEL_SIZE": 0.1})
    smv.write_smv(tmp_path / "mask.img", np.ones((32, 32), dtype=np.uint16), {"PIXEL_SIZE": 0.1})
    (tmp_path / "sources.txt").write_text("-10 0 0\n")
    (tmp_path / "stol.txt").write_text("0 1\n")


OVER_INPUTS = [
    (["-hkl", "in.hkl", "-floatfile", "in.hkl"], "-floatfile in.hkl is the -hkl input file in.hkl"),
    (["-mat", "A.mat", "-intfile", "A.mat"], "-intfile A.mat is the -mat input file A.mat"),
    (["-img", "in.img", "-intfile", "in.img"], "-intfile in.img is the -img input file in.img"),
    (["-mask", "mask.img", "-noisefile", "mask.img"], "-noisefile mask.img is the -mask input file mask.img"),
    (["-sourcefile", "sources.txt", "-pgmfile", "sources.txt"], "-pgmfile sources.txt is the -sourcefile input"),
    (["-stol", "stol.txt", "-floatfile", "./stol.txt"], "-floatfile ./stol.txt is the -stol input file stol.txt"),
    (["-hkl", "in.hkl", "-trace_pixel", "1", "2", "--trace-json", "in.hkl"], "--trace-json in.hkl is the -hkl"),
    (["-hkl", "in.hkl", "-floatfile", "hard.hkl"], "-floatfile hard.hkl is the -hkl input file in.hkl"),
    (["-hkl", "in.hkl", "-floatfile", "soft.hkl"], "-floatfile soft.hkl is the -hkl input file in.hkl"),
]


@pytest.mark.parametrize("argv,message", OVER_INPUTS, ids=[m.split(" is ")[0] for _, m in OVER_INPUTS])
def test_an_output_may_not_overwrite_an_input(argv, message, tmp_path, monkeypatch, capsys):
    import os
    monkeypatch.chdir(tmp_path)
    _input_files(tmp_path)
    os.link("in.hkl", "hard.hkl")
    os.symlink("in.hkl", "soft.hkl")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main(SMALL + ["-seed", "1"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"detsim: error: {message}") and err.count("\n") == 1, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_two_outputs_that_are_hard_links_of_one_file_are_refused(tmp_path, monkeypatch, capsys):
    import os
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.img").write_bytes(b"old")
    os.link("a.img", "b.img")
    assert main(SMALL + ["-seed", "1", "-intfile", "a.img", "-noisefile", "b.img"]) == 2
    err = capsys.readouterr().err
    assert "-noisefile b.img and -intfile a.img name the same file" in err and err.count("\n") == 1, err
    assert (tmp_path / "a.img").read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["a.img", "b.img"]


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")
def test_out_of_space_names_the_file_and_replaces_no_output(tmp_path, monkeypatch, capsys):
    import os
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.bin").write_bytes(b"old float")
    assert main(SMALL + ["-seed", "1", "-floatfile", "ok.bin", "-intfile", "/dev/full"]) == 1
    err = capsys.readouterr().err
    assert err == "detsim: error: cannot write /dev/full: No space left on device\n", err
    assert (tmp_path / "ok.bin").read_bytes() == b"old float" and os.listdir(tmp_path) == ["ok.bin"]


def test_a_write_that_fails_midway_replaces_no_output(tmp_path, monkeypatch, capsys):
    import errno
    import os
    monkeypatch.chdir(tmp_path)
    for name in ("float.bin", "int.img", "noise.img"):
        (tmp_path / name).write_bytes(b"old")
    real, calls = smv.smv_writer, []

    def full_noise(data, header):  # the int image is written; the noise image, the last output, finds the disk full
        calls.append(1)
        if len(calls) == 1:
            return real(data, header)

        def write(handle):
            raise OSError(errno.ENOSPC, "No space left on device")
        return write

    monkeypatch.setattr(smv, "smv_writer", full_noise)
    assert main(SMALL + ["-seed", "1", "-nopgm", "-floatfile", "float.bin", "-intfile", "int.img",
                         "-noisefile", "noise.img"]) == 1
    assert capsys.readouterr().err == "detsim: error: cannot write noise.img: No space left on device\n"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {n: b"old" for n in os.listdir(tmp_path)}
    assert sorted(os.listdir(tmp_path)) == ["float.bin", "int.img", "noise.img"]


def test_the_same_character_device_may_take_several_outputs(tmp_path, monkeypatch):
    import os
    import stat
    monkeypatch.chdir(tmp_path)
    if os.geteuid() == 0:  # a node of our own, so that a bug could never replace /dev/null itself
        os.mknod("null", 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
        null = "null"
    else:
        null = "/dev/null"
    assert main(SMALL + ["-seed", "1", "-floatfile", null, "-intfile", null, "-pgmfile", null,
                         "-noisefile", null]) == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)


@pytest.mark.parametrize("flag", ["-mat", "-sourcefile", "-hkl"])
def test_a_binary_input_file_is_one_line_error(flag, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(SMALL + [flag, "blob.bin"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("detsim: error: ") and err.count("\n") == 1 and "blob.bin" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


NOT_FILES = [
    (["-hkl", "/dev/zero"], "/dev/zero: is a character device; the HKL file must be a regular file"),
    (["-mat", "/dev/zero"], "/dev/zero: is a character device; the matrix file must be a regular file"),
    (["-sourcefile", "/dev/zero"], "/dev/zero: is a character device; the source file must be a regular file"),
    (["-hkl", "adir"], "adir: is a directory; the HKL file must be a regular file"),
    (["-img", "/dev/null"], "-img /dev/null: is a character device, not an SMV image"),
    (["-img", "/dev/zero"], "-img /dev/zero: is a character device, not an SMV image"),
    (["-mask", "adir"], "-mask adir: is a directory, not an SMV image"),
    (["-img", "empty.img"], "-img empty.img: is an empty file, not an SMV image"),
]


@pytest.mark.parametrize("argv,message", NOT_FILES, ids=[" ".join(a) for a, _ in NOT_FILES])
def test_an_input_that_is_not_a_regular_file_is_refused_saying_what_it_is(argv, message, tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "empty.img").write_bytes(b"")
    assert main(SMALL + ["-seed", "1"] + argv) == 2
    assert capsys.readouterr().err == f"detsim: error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "empty.img"]


HELP_SCREEN_LINES = 40  # the top-level help fits one terminal screen


@pytest.mark.parametrize("flag", ["-h", "-help", "--help"])
def test_help_is_one_screen_and_names_how_to_get_the_details(flag, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([flag]) == 0
    out = capsys.readouterr().out
    assert main(SMALL + [flag]) == 0  # anywhere on the line, and nothing is rendered
    assert capsys.readouterr().out == out
    lines = out.splitlines()
    assert lines[0].startswith("usage: detsim")
    assert len(lines) <= HELP_SCREEN_LINES and max(map(len, lines)) <= 100
    assert "detsim -h FLAG" in out and "detsim -help all" in out
    for common in ("-cell", "-hkl", "-distance", "-detpixels", "-floatfile", "-dtype", "-mode"):
        assert f"{common} " in out, common
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["-h", "-help", "--help"])
def test_help_all_prints_every_flag_of_the_table_and_exits_0(flag, tmp_path, monkeypatch, capsys):
    from detsim.commandline.flag_table import HANDLERS
    monkeypatch.chdir(tmp_path)
    assert main([flag, "all"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: detsim")
    for handler in HANDLERS:
        values, _, text = handler.doc.rpartition("|")
        assert text, f"{handler.pattern} has no help text"
        for name in (handler.pattern, *handler.also):
            assert f"  {name}" in out or f", {name}" in out, name
    for own in ("-dtype", "-device", "-mode", "-chunk_pixels", "-threads", "-trace_pixel", "--trace-json",
                "-physical_phi", "-nanobragg_threads"):
        assert own in out.split("detsim's own flags:")[1]
    assert list(tmp_path.iterdir()) == []


def test_help_flag_prints_the_entry_of_each_flag_named_after_it(capsys):
    assert main(["-h", "-cell", "100", "-sample_height", "0.1", "-floatfile", "x.bin"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("-cell: -cell a [b c al be ga]\n")
    assert "takes 1 to 6 values\n  default: none: -cell or -mat is required\n  read at nanoBragg.c L531-552; " in out
    assert "-sample_heigh, -sample_z, -heigh: -sample_heigh mm" in out  # the handler nanoBragg runs for it
    assert "-floatfile, -floatimage: -floatfile file" in out
    assert main(["-help", "roi"]) == 0
    assert "takes 4 values; fewer is an error" in capsys.readouterr().out


def test_help_for_a_flag_that_does_not_exist_is_one_line_exit_2(capsys):
    assert main(["-h", "-bogus"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "detsim: error: -h: no flag -bogus (detsim -help all lists them)\n"
    assert captured.out == ""


NO_TORCH_ANSWERS = """
import sys
from detsim.commandline.command import main
codes = [main(["-h"]), main(["-help", "all"]), main(["-cell", "100", "-bogus"]), main(["-N", "x"])]
print(codes, "torch" in sys.modules, file=sys.stderr)
"""


def test_help_and_a_bad_flag_answer_without_importing_torch(tmp_path):
    # a fresh interpreter: this one imported torch long ago
    done = subprocess.run([sys.executable, "-c", NO_TORCH_ANSWERS], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "[0, 0, 2, 2] False", done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_run_whose_smv_header_exceeds_512_bytes_writes_a_valid_smv(tmp_path, monkeypatch):
    # this geometry's numbers make the header text longer than 512 bytes
    monkeypatch.chdir(tmp_path)
    argv = ["-twotheta", "13.84", "-Ybeam", "2.412", "-phi", "-68.97", "-lambda", "2.0638", "-cell", "99.99",
            "99.99", "44.4", "90", "90", "90", "-osc", "4.25", "-default_F", "71.9", "-N", "2", "-detpixels",
            "16", "-noprogress", "-nopgm", "-seed", "3", "-oversample", "1"]
    assert main(argv) == 0
    image = io.read_float_image(tmp_path / "floatimage.bin", (16, 16))
    expected, _ = io.int_image(image)
    for name in ("intimage.img", "noiseimage.img"):
        raw = (tmp_path / name).read_bytes()
        header_bytes = int(raw.split(b"HEADER_BYTES=")[1].split(b";")[0])
        assert header_bytes % 512 == 0 and header_bytes > 512 and len(raw) == header_bytes + 2 * 16 * 16
        assert raw.index(b"}") < header_bytes
    pixels = np.frombuffer((tmp_path / "intimage.img").read_bytes(), dtype="<u2", offset=header_bytes)
    assert np.array_equal(pixels.reshape(16, 16), expected)
    assert np.array_equal(smv.read_smv(tmp_path / "intimage.img")[1], expected)


ABSURD = [
    (["-detpixels", "1000000"], "-detpixels"),
    (["-oversample", "100000"], "-oversample"),
    (["-phisteps", "1000000000", "-osc", "1"], "-phisteps"),
    (["-mosaic", "1", "-mosaic_dom", "2000000000"], "-mosaic_dom"),
    (["-hkl", "box.hkl"], "box.hkl"),
    (["-distance", "1e-300"], "-distance"),
    (["-lambda", "1e-300"], "-lambda"),
    (["-pixel", "1e300"], "-pixel"),
    (["-cell", "1e300", "1e300", "1e300", "90", "90", "90"], "-cell"),
    (["-cell", "1e300", "1e300", "1e300", "90", "90", "90", "-oversample", "1"], "-cell"),
    (["-cell", "1e-300", "1e-300", "1e-300", "90", "90", "90"], "-cell"),
    (["-mat", "nearly_singular.mat"], "-mat"),
    (["-dispersion", "10", "-dispsteps", "2000000000"], "-dispsteps"),
    (["-divergence", "1", "-divsteps", "100000"], "-divsteps"),
]


OVERFLOWS = [
    (["-water", "1e300"], "the water background of -water 1e+300 um overflows double precision"),
    (["-default_F", "1e200"], "-default_F 1e+200 squared overflows double precision"),
    (["-osc", "1", "-phistep", "1e-320"], "the number of phi steps (-osc over -phistep) overflows"),
    (["-divergence", "1", "-hdivstep", "1e-320"], "the number of divergence steps"),
    (["-detector_abs", "1e-320"], "-detector_abs 1e-320: the attenuation 1 / (1e-320 um) overflows"),
    (["-detector_thick", "1e-320"], "the attenuation 1 / -detector_thick"),
    (["-pixel", "1.7e308"], "the number of pixels along fast (-detsize_f / -pixel, or -pixel x -detpixels_f)"),
    (["-flux", "1e10", "-beamsize", "1e-300"], "the fluence -flux x -exposure / -beamsize squared overflows"),
    (["-mosaic", "1e300"], "-mosaic 1e+300 degrees overflows the float32 of the mosaic angle"),
    (["-polar", "1e300"], "overflows the float32 of the output images"),
]


@pytest.mark.parametrize("argv,message", OVERFLOWS, ids=[" ".join(a) for a, _ in OVERFLOWS])
def test_a_value_whose_derived_quantities_overflow_is_refused_naming_it(argv, message, tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.chdir(tmp_path)
    assert main(SMALL + ["-seed", "1", "-oversample", "1"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("detsim: error: ") and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_an_overflow_no_check_names_is_still_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def overflowing(*args, **kwargs):
        return 10.0 ** 400

    monkeypatch.setattr("detsim.rendering.engine.prepare", overflowing)
    assert main(SMALL + ["-seed", "1"]) == 2
    err = capsys.readouterr().err
    assert err == ("detsim: error: a number derived from the command line is out of double precision's range "
                   "(Numerical result out of range)\n"), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv,named", ABSURD, ids=[" ".join(a[0])[:30] for a in ABSURD])
def test_absurd_sizes_are_refused_up_front_against_the_memory_available(argv, named, tmp_path, monkeypatch,
                                                                        capsys):
    # 256 MiB "available": every case must be refused from its sizes alone, before it allocates them
    monkeypatch.setattr("detsim.host.memory.available_bytes", lambda device=None: 256 << 20)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "box.hkl").write_text("0 0 0 10\n500 500 500 10\n")
    (tmp_path / "nearly_singular.mat").write_text("0.01 0 0\n0 0.01 0\n0 0 1e-300\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(SMALL + argv + ["-seed", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("detsim: error: ") and err.count("\n") == 1 and named in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_normal_run_fits_in_little_memory(tmp_path, monkeypatch):
    monkeypatch.setattr("detsim.host.memory.available_bytes", lambda device=None: 256 << 20)
    monkeypatch.chdir(tmp_path)
    assert main(SMALL + ["-seed", "1", "-mosaic", "1", "-mosaic_dom", "3", "-phisteps", "2", "-osc", "1"]) == 0


def test_a_render_that_makes_nan_is_refused_before_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    real_render = __import__("detsim.rendering.engine", fromlist=["render"]).render

    def nan_render(*args, **kwargs):
        image, info = real_render(*args, **kwargs)
        image[3, 4] = float("nan")
        return image, info

    monkeypatch.setattr("detsim.rendering.engine.render", nan_render)
    assert main(SMALL + ["-seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "NaN" in err and err.count("\n") == 1 and "slow 3, fast 4" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum,code", [(__import__("signal").SIGTERM, 143), (__import__("signal").SIGINT, 130)])
def test_a_signal_during_the_write_leaves_no_temporary_file(signum, code, tmp_path, monkeypatch, capsys):
    import os
    import signal
    monkeypatch.chdir(tmp_path)
    real = smv._uint16_bytes

    def interrupted(data):  # the signal arrives while the SMV temporary file is open
        assert any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
        os.kill(os.getpid(), signum)
        return real(data)

    monkeypatch.setattr(smv, "_uint16_bytes", interrupted)
    handler = signal.getsignal(signal.SIGTERM)
    assert main(SMALL + ["-seed", "1", "-nopgm", "-nonoise"]) == code
    assert signal.getsignal(signal.SIGTERM) is handler  # restored for whoever called main
    assert list(tmp_path.iterdir()) == []  # outputs are written all or none: the float image was staged only
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "detsim:" in err, err


def test_the_progress_bar_shows_elapsed_time_and_an_estimate_of_the_time_left(monkeypatch):
    import io as stdio
    from detsim.commandline import command as cli

    class Terminal(stdio.StringIO):
        def isatty(self):
            return True

    clock = iter([100.0, 130.0, 190.0])
    monkeypatch.setattr(cli.time, "monotonic", lambda: next(clock))
    stream = Terminal()
    progress = cli._Progress(True, stream=stream, delay_s=2.0)  # starts at t = 100 s
    progress(0.25)  # t = 130 s: 30 s for a quarter, 90 s left
    progress(0.5)   # t = 190 s: 90 s for half, 90 s left
    progress.close()
    lines = stream.getvalue().split("\r")
    assert "25.0%" in lines[1] and "0:30 elapsed" in lines[1] and "1:30 left" in lines[1], lines
    assert "50.0%" in lines[2] and "1:30 elapsed" in lines[2] and "1:30 left" in lines[2], lines


def test_a_write_that_fails_after_the_checks_is_one_line_exit_1(tmp_path, monkeypatch, capsys):
    import errno
    monkeypatch.chdir(tmp_path)

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr("os.replace", full)  # every rename of a finished output
    assert main(SMALL + ["-seed", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("detsim: error: ") and err.count("\n") == 1 and "No space left" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", ["a01_cubic_mosflm_center", "c02_xds_xbeam_quirk", "s01_noise_intfile_scale",
                                  "g01_hkl_nointerp"])
def test_every_line_detsim_prints_is_nanobraggs_word_for_word_but_its_own(case, tmp_path, monkeypatch, capsys):
    import re

    from detsim.commandline.command import OWN_LINES

    shutil.copytree(GOLDEN_DIR / case, tmp_path / case)
    monkeypatch.chdir(tmp_path / case)
    assert main((tmp_path / case / "args.txt").read_text().split()) == 0
    printed = capsys.readouterr().out.splitlines()
    theirs = (GOLDEN_DIR / case / "stdout.txt").read_text().splitlines()
    shared = [line for line in printed if not any(re.fullmatch(p, line) for p in OWN_LINES)]
    assert len(shared) >= 12 and len(shared) < len(theirs) / 2  # a summary: fewer than half of nanoBragg's lines
    assert [line for line in shared if line not in theirs] == []
