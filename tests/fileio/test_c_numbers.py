"""C's number readers (detsim.fileio.c_numbers): glibc's strtod/atof and strtol/atoi grammar, value for value."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import platform
import random

import pytest

from detsim.fileio import c_numbers


@pytest.mark.parametrize("text,value,used", [
    ("12abc", 12.0, 2),
    ("-cell", 0.0, 0),
    ("1e-3x", 1e-3, 4),
    ("1_00", 1.0, 1),  # Python's float() reads 100
    ("１００", 0.0, 0),  # full-width digits: Python reads 100
    ("١٠٠", 0.0, 0),  # Arabic-Indic digits
    ("\u00a0100", 0.0, 0),  # a no-break space is no C space
    (" \t\n\v\f\r100", 100.0, 9),
    ("+5", 5.0, 2),
    (".5", 0.5, 2),
    ("5.", 5.0, 2),
    ("1E-3", 1e-3, 4),
    ("1e", 1.0, 1),
    ("1e+", 1.0, 1),
    (".", 0.0, 0),
    ("-", 0.0, 0),
    ("0x1p3", 8.0, 5),  # hex floats, as glibc reads them
    ("0X1.8P1", 3.0, 7),
    ("-0x.8", -0.5, 5),
    ("0x", 0.0, 1),  # the 0 only
    ("0x1p", 1.0, 3),
    ("0x1p99999", math.inf, 9),
    ("1e400", math.inf, 5),
    ("1e-400", 0.0, 6),
    ("4.9406564584124654e-324", 5e-324, 23),
    ("INF", math.inf, 3),
    ("-Infinity", -math.inf, 9),
    ("infinit", math.inf, 3),
])
def test_strtod_reads_the_number_c_reads_and_says_how_much_it_used(text, value, used):
    assert c_numbers.strtod(text) == (value, used)
    assert c_numbers.atof(text) == value


@pytest.mark.parametrize("text,used", [("nan", 3), ("-NaN", 4), ("nan(0x7ff)", 10), ("nan(", 3)])
def test_strtod_reads_nan_with_or_without_its_payload(text, used):
    value, end = c_numbers.strtod(text)
    assert math.isnan(value) and end == used


@pytest.mark.parametrize("text", ["1e2", " 100", "100 ", "+5", ".5", "5.", "1E-3", "-0.25", "3", "1e-300"])
def test_a_number_nanobragg_accepts_reads_as_python_read_it(text):
    assert c_numbers.parse_float(text) == float(text)


@pytest.mark.parametrize("text", ["1_00", "１００", "١٠٠", "100abc", "", " ", "1e", "1.2.3", "0x1g", "1,5"])
def test_a_text_that_is_not_wholly_a_number_is_no_number(text):
    assert c_numbers.parse_float(text) is None


@pytest.mark.parametrize("text,value", [("7", 7), (" -12 ", -12), ("+3", 3), ("007", 7), ("99999999999", 99999999999)])
def test_parse_int_reads_decimal_integers(text, value):
    assert c_numbers.parse_int(text) == value


@pytest.mark.parametrize("text", ["7.9", "0x10", "1_0", "３", "1e3", "", "-"])
def test_parse_int_refuses_anything_else(text):
    assert c_numbers.parse_int(text) is None


@pytest.mark.parametrize("text,value", [
    ("7.9", 7), ("x", 0), ("1_0", 1), ("0x10", 0), ("-12abc", -12),
    ("2147483647", 2147483647),
    ("2147483648", -2147483648),  # strtol's long, converted to a C int
    ("99999999999", 1215752191),
    ("99999999999999999999", -1),  # strtol clamps to LONG_MAX first
])
def test_atoi_is_strtol_converted_to_a_c_int(text, value):
    assert c_numbers.atoi(text) == value


def _glibc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("needs glibc")
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.strtod.restype = ctypes.c_double
    libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
    libc.atoi.restype = ctypes.c_int
    libc.atoi.argtypes = [ctypes.c_char_p]
    return libc


def _texts() -> list[str]:
    """Hand-picked traps and random strings over the characters a number is made of."""
    rng = random.Random(7)
    alphabet = "0123456789+-.eEpPxXaAfFiInNtTyY()_ \t" + "１٠"
    fixed = ["1e2", " 100", "+5", ".5", "5.", "1E-3", "1_00", "0x1p3", "0x1.fffffffffffff8p1023", "0x1p-1075",
             "0x1.00000000000008p0", "2.4703282292062328e-324", "1.7976931348623158e308", "nan(abc)", "-0",
             "0x.", "0xp3", "1e+-3", "+-1", "  -.5e-3junk", "9" * 400, "0." + "0" * 400 + "1"]
    return fixed + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]


def test_strtod_and_atoi_agree_with_the_c_library_on_traps_and_random_text():
    libc = _glibc()
    for text in _texts():
        raw = text.encode()
        end = ctypes.c_char_p()
        expected = libc.strtod(raw, ctypes.byref(end))
        used = len(raw) - len(end.value)
        value, consumed = c_numbers.strtod(text)
        assert len(text[:consumed].encode()) == used, text
        assert value == expected or (math.isnan(value) and math.isnan(expected)), text
        assert math.copysign(1, value) == math.copysign(1, expected) or math.isnan(value), text
        assert c_numbers.atoi(text) == libc.atoi(raw), text
