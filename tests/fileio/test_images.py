"""Tests for detsim.fileio.images: raw float and PGM files and nanoBragg's int/pgm scaling (spec §6.2, §6.3), and
what every image writer shares: atomic writes and paths that are not plain files (the SMV writer among them)."""

import os
from pathlib import Path

import numpy as np
import pytest

from _tolerances import F64_ULPS
from detsim.fileio.safe_write import OutputError
import detsim.fileio.safe_write
from detsim.fileio.images import (
    image_statistics,
    int_image,
    pgm_image,
    read_float_image,
    write_float_image,
    write_pgm,
)
from detsim.fileio.smv import read_smv, write_smv

GOLDEN = Path(__file__).parents[1] / "golden"
S01 = GOLDEN / "s01_noise_intfile_scale"
S02 = GOLDEN / "s02_intfile_autoscale_adc"

def golden_image(case):
    return read_float_image(case / "image.bin", (128, 128))


def listing(directory):
    return sorted(p.name for p in Path(directory).iterdir())


# ---------------------------------------------------------------- raw float


def test_float_round_trip_is_little_endian_c_order(tmp_path):
    image = np.arange(12, dtype=np.float64).reshape(3, 4) / 7.0
    path = tmp_path / "img.bin"
    write_float_image(path, image)
    raw = path.read_bytes()
    assert len(raw) == 48
    assert np.frombuffer(raw, dtype="<f4")[5] == np.float32(5 / 7.0)
    back = read_float_image(path, (3, 4))
    assert back.dtype == np.float32 and back.shape == (3, 4)
    assert np.array_equal(back, image.astype(np.float32))
    assert listing(tmp_path) == ["img.bin"]


def test_read_float_image_size_mismatch_names_file(tmp_path):
    path = tmp_path / "short_image.bin"
    path.write_bytes(b"\0" * 60)
    with pytest.raises(ValueError) as info:
        read_float_image(path, (4, 4))
    message = str(info.value)
    assert "short_image.bin" in message and "\n" not in message
    assert "60" in message and "64" in message


def test_write_float_image_rejects_non_2d(tmp_path):
    with pytest.raises(ValueError):
        write_float_image(tmp_path / "x.bin", np.zeros(4))
    assert listing(tmp_path) == []


# ---------------------------------------------------------------- statistics and intfile


def test_image_statistics_match_golden_stdout():
    # s01 stdout: "max_I = 145.502 ..." and "mean= 1.20353 rms= 7.55802 rmsd= 7.46157".
    stats = image_statistics(golden_image(S01))
    printed = {key: "%g" % value for key, value in stats.items()}
    assert printed == {"max_I": "145.502", "mean": "1.20353", "rms": "7.55802", "rmsd": "7.46157"}


def test_image_statistics_roi_and_mask_counts():
    image = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, 6.0]], dtype=np.float32)
    roi = np.array([[True, True, False], [True, True, False]])
    mask = np.array([[True, True, True], [True, False, True]])
    stats = image_statistics(image, roi, mask)
    # Rendered: 1, 2, 4 -> mean 7/3, rms sqrt(21/2); rmsd over the 4 ROI pixels (the masked 0 included).
    mean = 7.0 / 3.0
    assert stats["max_I"] == 4.0
    assert stats["mean"] == pytest.approx(mean, rel=F64_ULPS)
    assert stats["rms"] == pytest.approx(np.sqrt(21.0 / 2.0), rel=F64_ULPS)
    expected_rmsd = np.sqrt(sum((v - mean) ** 2 for v in (1.0, 2.0, 4.0, 0.0)) / 3.0)
    assert stats["rmsd"] == pytest.approx(expected_rmsd, rel=F64_ULPS)

    negative = image_statistics(np.full((2, 2), -3.0, dtype=np.float32))
    assert negative["max_I"] == 0.0
    # C squares each float in single precision before summing in double: rms of one 1.1f is sqrt(float32(1.1f**2)).
    value = float(np.float32(1.1))
    single = image_statistics(np.array([[value]], dtype=np.float32))
    assert single["rms"] == np.sqrt(float(np.float32(value * value))) != value
    assert single["rmsd"] == 0.0


def test_int_image_reproduces_golden_fixed_scale():
    # s01: -intfile int.img -scale 2 (adc 40).
    header, expected = read_smv(S01 / "int.img")
    counts, scale = int_image(golden_image(S01), scale=2.0, adc=40.0)
    assert scale == 2.0
    assert counts.dtype == np.uint16
    assert np.array_equal(counts, expected)
    assert (header["SIZE1"], header["SIZE2"], float(header["PIXEL_SIZE"])) == ("128", "128", 0.1)


def test_int_image_reproduces_golden_auto_scale():
    # s02: -intfile int.img -adc 10, automatic scale; stdout "intfile_scale = 396.931".
    _, expected = read_smv(S02 / "int.img")
    counts, scale = int_image(golden_image(S02), scale=None, adc=10.0)
    assert "%g" % scale == "396.931"
    assert np.array_equal(counts, expected)
    assert counts.max() == 55010
    assert np.array_equal(int_image(golden_image(S02), scale=0.0, adc=10.0)[0], expected)


def test_int_image_rounds_in_float32_and_clamps():
    # I * scale + adc + 0.5 = 100.99999999 in double; C's floorf sees float32(100.99999999) = 101.
    one = np.ones((1, 1), dtype=np.float32)
    assert int_image(one, scale=100.49999999, adc=0.0)[0].tolist() == [[101]]
    assert int_image(one, scale=1.0, adc=99.49999999)[0].tolist() == [[101]]
    assert int_image(one, scale=1.0, adc=99.4999)[0].tolist() == [[100]]

    image = np.array([[2.4, 2.5, -50.0, 1e9, np.inf, np.nan]], dtype=np.float32)
    counts, _ = int_image(image, scale=1.0, adc=0.0)
    assert counts.tolist() == [[2, 3, 0, 65535, 65535, 0]]
    zero, scale = int_image(np.zeros((2, 2), dtype=np.float32), scale=None, adc=40.0)
    assert scale == 1.0 and zero.tolist() == [[40, 40], [40, 40]]


def test_int_image_roi_outside_is_zero_and_sets_auto_scale():
    image = np.array([[1.0, 100.0], [2.0, 4.0]], dtype=np.float32)
    roi = np.array([[True, False], [True, True]])
    counts, scale = int_image(image, scale=None, adc=40.0, roi_mask=roi)
    assert scale == 55000.0 / 4.0
    assert counts.tolist() == [[13790, 0], [27540, 55040]]


# ---------------------------------------------------------------- PGM


def test_pgm_image_scale_truncation_and_roi():
    image = np.array([[0.0, 1.0, 2.0], [3.0, 10.0, 0.5]], dtype=np.float32)
    grey, scale = pgm_image(image, scale=30.0, int_scale=1.0)
    assert scale == 30.0 and grey.dtype == np.uint8
    assert grey.tolist() == [[0, 30, 60], [90, 255, 15]]
    grey, _ = pgm_image(image, scale=25.5, int_scale=1.0, roi_mask=image < 5)
    assert grey.tolist() == [[0, 25, 51], [76, 0, 12]]


def test_pgm_auto_scale_uses_rmsd_then_int_scale():
    image = golden_image(S01)
    grey, scale = pgm_image(image, scale=None, int_scale=2.0)
    assert scale == 250.0 / (5.0 * image_statistics(image)["rmsd"])
    assert "%g" % scale == "%g" % (250.0 / (5.0 * 7.46157))
    assert np.array_equal(grey, np.minimum(image.astype(np.float64) * scale, 255.0).astype(np.uint8))
    assert grey.max() == 255 and grey.min() == 0

    flat = np.full((3, 3), 2.0, dtype=np.float32)
    grey, fallback = pgm_image(flat, scale=0.0, int_scale=7.5)
    assert fallback == 7.5 and (grey == 15).all()


def test_write_pgm_header_and_data(tmp_path):
    grey = np.array([[1, 2, 3], [4, 5, 255]], dtype=np.uint8)
    path = tmp_path / "image.pgm"
    write_pgm(path, grey, 6.70093)
    raw = path.read_bytes()
    header = b"P5\n3 2\n# pixels scaled by 6.70093\n255\n"
    assert raw == header + grey.tobytes()
    with pytest.raises(ValueError):
        write_pgm(tmp_path / "bad.pgm", grey.astype(np.uint16), 1.0)
    assert listing(tmp_path) == ["image.pgm"]


# ---------------------------------------------------------------- atomic writes


def test_failed_float_write_leaves_no_file(tmp_path):
    with pytest.raises((ValueError, TypeError)):
        write_float_image(tmp_path / "float.bin", np.array([["x", "y"]], dtype=object))
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    "writer",
    [
        lambda path: write_float_image(path, np.ones((4, 4))),
        lambda path: write_smv(path, np.ones((4, 4), dtype=np.uint16), {}),
        lambda path: write_pgm(path, np.ones((4, 4), dtype=np.uint8), 1.0),
    ],
)
def test_interrupted_write_keeps_old_file_and_removes_temp(tmp_path, monkeypatch, writer):
    path = tmp_path / "out.img"
    path.write_bytes(b"previous contents")

    def fail(src, dst):
        assert Path(src).parent == Path(dst).parent and Path(src).stat().st_size > 0
        raise OSError("disk full")

    monkeypatch.setattr(detsim.fileio.safe_write.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        writer(path)
    assert listing(tmp_path) == ["out.img"]
    assert path.read_bytes() == b"previous contents"

    monkeypatch.undo()
    writer(path)
    assert listing(tmp_path) == ["out.img"]
    assert path.read_bytes() != b"previous contents"


def test_written_files_get_default_permissions(tmp_path):
    path = tmp_path / "perm.bin"
    write_float_image(path, np.zeros((2, 2)))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


# ---------------------------------------------------------------- paths that are not plain files


def _char_device(tmp_path) -> Path:
    """A character device that discards what is written: a node of its own as root, else /dev/null.

    As root a node in tmp_path is used, so that a writer that replaced the path could not touch /dev/null.
    """
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "null"
    null = os.stat("/dev/null")
    os.mknod(node, 0o666 | __import__("stat").S_IFCHR, null.st_rdev)
    return node


def test_a_character_device_is_written_through_not_replaced(tmp_path):
    import stat
    device = _char_device(tmp_path)
    write_float_image(device, np.ones((4, 4)))
    write_smv(device, np.ones((4, 4), dtype=np.uint16), {})
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    import stat
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_float_image(fifo, np.full((2, 2), 1.5))
    reader.join(timeout=10)
    assert received == [np.full((2, 2), 1.5, dtype="<f4").tobytes()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_is_kept_and_its_target_written(tmp_path):
    target = tmp_path / "real.bin"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    write_float_image(link, np.full((2, 2), 2.0))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert read_float_image(target, (2, 2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert target.stat().st_mode & 0o777 == 0o640  # an existing file keeps its permissions
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.bin", "real.bin"]


def test_a_read_only_file_is_refused_and_kept(tmp_path):
    path = tmp_path / "locked.bin"
    path.write_bytes(b"keep me")
    path.chmod(0o444)
    with pytest.raises(OutputError, match="locked.bin.*read-only"):
        write_float_image(path, np.ones((2, 2)))
    assert path.read_bytes() == b"keep me" and path.stat().st_mode & 0o777 == 0o444
    assert listing(tmp_path) == ["locked.bin"]
