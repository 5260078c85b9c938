"""Tests for detsim.fileio.smv: SMV headers as nanoBragg writes them, the writer and the reader (spec §6.3)."""

import os
from pathlib import Path

import numpy as np
import pytest

import detsim.fileio.smv
from detsim.fileio.smv import read_smv, smv_header, smv_header_fields, write_smv

GOLDEN = Path(__file__).parents[1] / "golden"
S01 = GOLDEN / "s01_noise_intfile_scale"

# Geometry of the golden s01 run, as their stdout reports it (m converted to mm).
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


def listing(directory):
    return sorted(p.name for p in Path(directory).iterdir())


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
    monkeypatch.setattr(detsim.fileio.smv.memory, "available_bytes", lambda device: 1000)
    with pytest.raises(ValueError, match="frame.img: a 30x40 image needs .* of memory to read, more than the"):
        read_smv(path)


def test_failed_smv_write_leaves_no_file(tmp_path):
    unconvertible = np.array([["a", "b"], ["c", "d"]], dtype=object)
    with pytest.raises(ValueError):
        write_smv(tmp_path / "frame.img", unconvertible, {})
    with pytest.raises(ValueError):
        write_smv(tmp_path / "frame.img", np.full((2, 2), 70000), {})
    assert listing(tmp_path) == []


def test_an_existing_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "shared.img"
    path.write_bytes(b"x")
    path.chmod(0o664)
    write_smv(path, np.ones((2, 2), dtype=np.uint16), {})
    assert path.stat().st_mode & 0o777 == 0o664


def _independent_smv_parse(raw: bytes) -> tuple[int, dict[str, str]]:
    """HEADER_BYTES and the keys of an SMV file, read without detsim.fileio.smv (as an SMV reader does)."""
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
