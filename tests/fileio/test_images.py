"""Tests for detsim.fileio.images: raw float, SMV and PGM files and nanoBragg's int/pgm scaling (spec §6.2, §6.3)."""

import os
from pathlib import Path

import numpy as np
import pytest

from _tolerances import F64_ULPS
import detsim.fileio.images
from detsim.fileio.safe_write import OutputError
import detsim.fileio.safe_write
from detsim.fileio.images import (
    image_statistics,
    int_image,
    pgm_image,
    read_float_image,
    read_smv,
    smv_header,
    smv_header_fields,
    write_float_image,
    write_pgm,
    write_smv,
)

GOLDEN = Path(__file__).parents[1] / "golden"
S01 = GOLDEN / "s01_noise_intfile_scale"
S02 = GOLDEN / "s02_intfile_autoscale_adc"

# Geometry of the golden s01/s02 runs, as their stdout reports it (m converted to mm).
S01_GEOMETRY = dict(
    fpixels=128,
    spixels=128,
    pixel_mm=0.1,
    distance_mm=100.0,
    wavelength_A=1.0,
    xbeam_mm=6.45,
    ybeam_mm=6.45,
    fbeam_mm=6.5,
    sbeam_mm=6.5,
    detsize_s_mm=12.8,
    dials_origin_mm=(-6.5, 6.5, -100.0),
    orgx=65.5,
    orgy=65.5,
    close_distance_mm=100.0,
)


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


# ---------------------------------------------------------------- SMV


def test_smv_header_reproduces_nanobragg_bytes():
    expected = (S01 / "int.img").read_bytes()[:512]
    header = smv_header(smv_header_fields(**S01_GEOMETRY))
    assert header == expected
    assert (S01 / "noise.img").read_bytes()[:512] == expected


def test_smv_header_fields_derived_centres_and_formats():
    fields = smv_header_fields(
        **{**S01_GEOMETRY, "fbeam_mm": 20.0, "sbeam_mm": 30.05, "detsize_s_mm": 51.2},
        phi0_deg=10.0,
        osc_deg=0.25,
        twotheta_deg=-15.0,
    )
    text = smv_header(fields).decode("ascii")
    lines = text.split("\n")
    assert "ADXV_CENTER_X=20;" in lines and "ADXV_CENTER_Y=21.15;" in lines
    assert "MOSFLM_CENTER_X=30;" in lines and "MOSFLM_CENTER_Y=19.95;" in lines
    assert "DENZO_X_BEAM=30.05;" in lines and "DENZO_Y_BEAM=20;" in lines
    assert "PHI=10;" in lines and "OSC_START=10;" in lines and "OSC_RANGE=0.25;" in lines
    assert "TWOTHETA=-15;" in lines and "DIALS_ORIGIN=-6.5,6.5,-100" in lines
    assert list(fields)[:2] == ["SIZE1", "SIZE2"] and list(fields)[-2:] == ["DETECTOR_SN", "BEAMLINE"]
    assert "DISTANCE=1.23457e+06;" in smv_header({"DISTANCE": 1234567.0}).decode()
    assert "SIZE1=1234567;" in smv_header({"SIZE1": 1234567}).decode()


def test_smv_header_rejects_conflicts_and_overflow():
    with pytest.raises(ValueError, match="BYTE_ORDER"):
        smv_header({"BYTE_ORDER": "big_endian"})
    assert smv_header({"HEADER_BYTES": 512, "DIM": "2"}) == smv_header({})
    with pytest.raises(ValueError):
        smv_header({"BAD KEY": 1})
    with pytest.raises(ValueError):
        smv_header({"NOTE": "a;b"})


def test_smv_round_trip(tmp_path):
    data = (np.arange(6 * 5, dtype=np.uint32).reshape(6, 5) * 2000).astype(np.uint16)
    fields = smv_header_fields(**{**S01_GEOMETRY, "fpixels": 5, "spixels": 6})
    path = tmp_path / "frame.img"
    write_smv(path, data, fields)
    assert path.stat().st_size == 512 + 2 * data.size
    header, back = read_smv(path)
    assert back.dtype == np.uint16 and np.array_equal(back, data)
    assert header["SIZE1"] == "5" and header["SIZE2"] == "6"
    assert header["HEADER_BYTES"] == "512" and header["BYTE_ORDER"] == "little_endian"
    assert header["DIALS_ORIGIN"] == "-6.5,6.5,-100" and header["BEAMLINE"] == "fake"
    assert float(header["WAVELENGTH"]) == 1.0

    again = tmp_path / "again.img"
    write_smv(again, back, header)
    assert again.read_bytes() == path.read_bytes()

    write_smv(tmp_path / "sizes.img", data, {"DISTANCE": 100.0})
    sizes, _ = read_smv(tmp_path / "sizes.img")
    assert list(sizes)[4:7] == ["SIZE1", "SIZE2", "DISTANCE"]
    with pytest.raises(ValueError, match="SIZE1"):
        write_smv(tmp_path / "bad.img", data, {"SIZE1": 6, "SIZE2": 5})


def test_read_smv_big_endian_and_padded_header_bytes(tmp_path):
    data = np.array([[1, 258], [65535, 0]], dtype=">u2")
    text = "{\nHEADER_BYTES=  1024;\nDIM=2;\nBYTE_ORDER=big_endian;\nTYPE=unsigned_short;\nSIZE1=2;\nSIZE2=2;\n}\f"
    path = tmp_path / "be.img"
    path.write_bytes(text.encode().ljust(1024, b" ") + data.tobytes())
    header, back = read_smv(path)
    assert header["HEADER_BYTES"] == "1024"
    assert back.tolist() == [[1, 258], [65535, 0]]


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda raw: raw[:-1], "expected"),
        (lambda raw: raw[:50], "no closing"),
        (lambda raw: raw + b"\0\0", "expected"),
        (lambda raw: b"P5" + raw[2:], "not an SMV"),
        (lambda raw: raw.replace(b"SIZE1=4;", b"SIZE1=x;"), "SIZE1"),
        (lambda raw: raw.replace(b"SIZE1=4;", b"SIZE1=0_4;"), "SIZE1='0_4' is not an integer"),  # C reads 0
        (lambda raw: raw.replace(b"SIZE2=3;", b"SIZE9=3;"), "SIZE2"),
        (lambda raw: raw.replace(b"TYPE=unsigned_short", b"TYPE=signed___short"), "TYPE"),
        (lambda raw: raw.replace(b"DIM=2;", b"DIM 2;"), "malformed"),
        (lambda raw: raw.replace(b"HEADER_BYTES=512", b"HEADER_BYTES=50"), "HEADER_BYTES"),
    ],
)
def test_read_smv_malformed_names_file(tmp_path, mutate, fragment):
    good = tmp_path / "good.img"
    write_smv(good, np.ones((3, 4), dtype=np.uint16), {})
    bad = tmp_path / "broken_frame.img"
    bad.write_bytes(mutate(good.read_bytes()))
    with pytest.raises(ValueError) as info:
        read_smv(bad)
    message = str(info.value)
    assert "broken_frame.img" in message and "\n" not in message
    assert fragment in message


@pytest.mark.parametrize("name,message", [
    ("empty.img", "empty.img: is an empty file, not an SMV image"),
    ("adir", "adir: is a directory; the SMV image must be a regular file"),
    ("/dev/zero", "/dev/zero: is a character device; the SMV image must be a regular file"),
])
def test_read_smv_refuses_what_is_no_image_before_reading_it(tmp_path, monkeypatch, name, message):
    if name.startswith("/dev/") and not os.path.exists(name):
        pytest.skip(f"needs {name}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "empty.img").write_bytes(b"")
    with pytest.raises(ValueError) as info:
        read_smv(name)
    assert str(info.value) == message


def test_read_smv_reads_no_more_than_the_header_before_the_size_is_checked(tmp_path, monkeypatch):
    path = tmp_path / "big.img"
    write_smv(path, np.ones((3, 4), dtype=np.uint16), {})
    with open(path, "ab") as handle:
        handle.truncate(1_000_000_000)  # sparse: 1 GB that was read whole
    with pytest.raises(ValueError, match="big.img: 1000000000 bytes, expected 536"):
        read_smv(path)


def test_read_smv_refuses_an_image_larger_than_the_memory_available(tmp_path, monkeypatch):
    path = tmp_path / "frame.img"
    write_smv(path, np.ones((30, 40), dtype=np.uint16), {})
    monkeypatch.setattr(detsim.fileio.images.memory, "available_bytes", lambda device: 1000)
    with pytest.raises(ValueError, match="frame.img: a 30x40 image needs .* of memory to read, more than the"):
        read_smv(path)


# ---------------------------------------------------------------- atomic writes


def test_failed_smv_write_leaves_no_file(tmp_path):
    unconvertible = np.array([["a", "b"], ["c", "d"]], dtype=object)
    with pytest.raises(ValueError):
        write_smv(tmp_path / "frame.img", unconvertible, {})
    with pytest.raises(ValueError):
        write_smv(tmp_path / "frame.img", np.full((2, 2), 70000), {})
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


def test_an_existing_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "shared.img"
    path.write_bytes(b"x")
    path.chmod(0o664)
    write_smv(path, np.ones((2, 2), dtype=np.uint16), {})
    assert path.stat().st_mode & 0o777 == 0o664


def _independent_smv_parse(raw: bytes) -> tuple[int, dict[str, str]]:
    """HEADER_BYTES and the keys of an SMV file, read without detsim.fileio.images (as an SMV reader does)."""
    text = raw[:raw.index(b"}")].decode("ascii")
    keys = dict(line.rstrip(";").split("=", 1) for line in text.splitlines()[1:] if "=" in line)
    return int(keys["HEADER_BYTES"]), keys


def test_a_header_longer_than_512_bytes_is_padded_to_the_next_block_and_labelled_so(tmp_path):
    fields = {f"KEY{i}": "x" * 20 for i in range(30)}  # about 900 bytes of text
    header = smv_header(fields)
    assert len(header) == 1024 and header.startswith(b"{\nHEADER_BYTES=1024;\n")
    data = (np.arange(6 * 5, dtype=np.uint32).reshape(6, 5) * 2000).astype(np.uint16)
    write_smv(tmp_path / "long.img", data, fields)
    raw = (tmp_path / "long.img").read_bytes()
    header_bytes, keys = _independent_smv_parse(raw)
    assert header_bytes == 1024 and len(raw) == 1024 + data.nbytes and keys["KEY29"] == "x" * 20
    assert np.array_equal(np.frombuffer(raw, dtype="<u2", offset=header_bytes).reshape(6, 5), data)
    read_header, read_data = read_smv(tmp_path / "long.img")
    assert read_header["HEADER_BYTES"] == "1024" and np.array_equal(read_data, data)
    with pytest.raises(ValueError, match="HEADER_BYTES"):
        smv_header({"HEADER_BYTES": 512, **fields})


@pytest.mark.slow  # fabio is the interop extra, installed for the slow job; the check above reads the same file
def test_fabio_reads_a_long_header_smv_right(tmp_path):
    import fabio  # a reader other than detsim's own
    fields = {f"KEY{i}": "x" * 20 for i in range(30)}
    data = (np.arange(6 * 5, dtype=np.uint32).reshape(6, 5) * 2000).astype(np.uint16)
    write_smv(tmp_path / "long.img", data, fields)
    image = fabio.open(str(tmp_path / "long.img"))
    assert image.header["HEADER_BYTES"] == "1024"
    assert np.array_equal(np.asarray(image.data), data)
