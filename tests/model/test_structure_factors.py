"""Tests for detsim.model.structure_factors: the HKL reader and the F(h,k,l) lookups (spec §2.1, §5.7)."""

import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from _tolerances import F64_GRADIENT, F64_POLYNOMIAL, F64_ROUNDING, F64_STRUCTURE_FACTOR_ABS, FLOAT32_TRICUBIC
from detsim.fileio.bounded_read import MAX_LINE_BYTES
from detsim.model import structure_factors
from detsim.model.structure_factors import HKLError, HKLTable, StructureFactors, read_hkl

GOLDEN_HKL = Path(__file__).parents[1] / "golden" / "g02_hkl_interp" / "P1.hkl"


def write(tmp_path, text, name="test.hkl"):
    path = tmp_path / name
    path.write_text(text)
    return path


def table_from(array, lows=(0, 0, 0)):
    values = np.array(array, dtype=np.float64)
    return HKLTable(*lows, values=values, count=values.size, source="memory")


def cubic_poly(h, k, l):
    return 1 + 2 * h - 0.5 * h**2 + 0.1 * h**3 + k * l - 0.3 * l**3 + 0.2 * h * k**3


def poly_table(lows=(-6, -5, -4), highs=(7, 5, 6)):
    axes = [np.arange(lo, hi + 1, dtype=np.float64) for lo, hi in zip(lows, highs)]
    hh, kk, ll = np.meshgrid(*axes, indexing="ij")
    return table_from(cubic_poly(hh, kk, ll), lows)


def lagrange_1d(nodes, values, x):
    """Textbook 4-point Lagrange interpolation, written independently of the module."""
    total = 0.0
    for i, (xi, yi) in enumerate(zip(nodes, values)):
        weight = 1.0
        for j, xj in enumerate(nodes):
            if j != i:
                weight *= (x - xj) / (xi - xj)
        total += weight * yi
    return total


def scalar_tricubic(table, h, k, l):
    """Reference: reduce along l, then k, then h with plain Python floats."""
    def nodes(x):
        f = math.floor(x)
        return [f - 1, f, f + 1, f + 2]

    hs, ks, ls = nodes(h), nodes(k), nodes(l)
    along_k = []
    for hn in hs:
        along_l = []
        for kn in ks:
            ys = [table.values[hn - table.h_min, kn - table.k_min, ln - table.l_min] for ln in ls]
            along_l.append(lagrange_1d(ls, ys, l))
        along_k.append(lagrange_1d(ks, along_l, k))
    return lagrange_1d(hs, along_k, h)


def interior_points(sf, n, generator, margin=0.0):
    lows = torch.tensor([sf.h_min + 2 + margin, sf.k_min + 2 + margin, sf.l_min + 2 + margin], dtype=torch.float64)
    highs = torch.tensor([sf.h_max - 2 - margin, sf.k_max - 2 - margin, sf.l_max - 2 - margin], dtype=torch.float64)
    u = torch.rand(n, 3, generator=generator, dtype=torch.float64)
    p = lows + u * (highs - lows)
    return p[:, 0], p[:, 1], p[:, 2]


# ---------------------------------------------------------------- read_hkl


def test_read_hkl_box_values_fill_duplicates_count(tmp_path):
    text = "\n".join(
        [
            "-1 0 2 10.5",
            "",
            "1 2 3 20",
            "   ",
            "0 1 2 7.25",
            "1 2 3 30",  # duplicate of line 3: the last one wins
            "+1.0 -0 2e0 -4",  # integral floats and signs are accepted
        ]
    ) + "\n"
    path = write(tmp_path, text)
    table = read_hkl(path)
    assert (table.h_min, table.h_max, table.k_min, table.k_max, table.l_min, table.l_max) == (-1, 1, 0, 2, 2, 3)
    assert table.values.shape == (3, 3, 2)
    assert table.values.dtype == np.float64
    assert table.count == 5
    assert table.source == str(path)

    def at(h, k, l):
        return table.values[h - table.h_min, k - table.k_min, l - table.l_min]

    assert at(-1, 0, 2) == 10.5
    assert at(0, 1, 2) == 7.25
    assert at(1, 2, 3) == 30.0
    assert at(1, 0, 2) == -4.0
    listed = {(-1, 0, 2), (0, 1, 2), (1, 2, 3), (1, 0, 2)}
    unlisted = [
        (h, k, l) for h in range(-1, 2) for k in range(0, 3) for l in range(2, 4) if (h, k, l) not in listed
    ]
    assert unlisted and all(at(*idx) == 0.0 for idx in unlisted)

    filled = read_hkl(path, default_F=3.5)
    assert all(filled.values[h + 1, k, l - 2] == 3.5 for h, k, l in unlisted)
    assert filled.values[2, 2, 1] == 30.0
    assert not filled.values.flags.writeable


def test_read_hkl_many_duplicates_last_wins(tmp_path):
    lines = [f"0 0 0 {i}" for i in range(200)] + ["1 1 1 5"] + [f"1 1 1 {i}" for i in range(300, 0, -1)]
    table = read_hkl(write(tmp_path, "\n".join(lines)))
    assert table.values[0, 0, 0] == 199.0
    assert table.values[1, 1, 1] == 1.0
    assert table.count == 501


def test_read_hkl_crlf_tabs_and_no_trailing_newline(tmp_path):
    path = tmp_path / "dos.hkl"
    path.write_bytes(b"0 0 0 1.5\r\n\t1\t0\t0\t2.5  \r\n\r\n0 0 1 3")
    table = read_hkl(path)
    assert table.values.shape == (2, 1, 2)
    assert table.values[0, 0, 0] == 1.5 and table.values[1, 0, 0] == 2.5 and table.values[0, 0, 1] == 3.0


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("0 0 0 1\n1 2 3\n", 2, "expected 'h k l F'"),
        ("0 0 0 1\n\n0 0 1 2 9\n", 3, "expected 'h k l F'"),
        ("0 0 0 1\nx 1 2 4\n", 2, "'x 1 2 4'"),
        ("0 0 0 1\n0 0 1 1_0\n", 2, "expected 'h k l F'"),
        ("0 0 0 1\n0 0 2 3\n1.5 0 0 2\n", 3, "h = 1.5"),
        ("0 0 0 1\n0 2.25 0 2\n", 2, "k = 2.25"),
        ("0 0 0 1\n0 0 1 nan\n", 2, "F = nan"),
        ("0 0 0 1\n0 0 1 -inf\n", 2, "F = -inf"),
        ("0 0 3e9 1\n", 1, "l = 3e9"),
        ("", 1, "no 'h k l F' records"),
        ("\n  \n\n", 3, "no 'h k l F' records"),
    ],
)
def test_read_hkl_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, text, name="bad_P1.hkl")
    with pytest.raises(HKLError) as info:
        read_hkl(path)
    message = str(info.value)
    assert "\n" not in message
    assert "bad_P1.hkl" in message
    assert f"line {line}:" in message
    assert fragment in message


def test_read_hkl_missing_file_names_path(tmp_path):
    path = tmp_path / "nowhere" / "missing.hkl"
    with pytest.raises(HKLError) as info:
        read_hkl(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name,kind", [("/dev/zero", "a character device"), ("/dev/null", "a character device"),
                                       ("adir", "a directory"), ("fifo", "a FIFO (named pipe)")])
def test_read_hkl_refuses_what_is_not_a_regular_file_before_reading_it(tmp_path, monkeypatch, name, kind):
    # /dev/zero was read whole: it grew to ~23 GB and was killed
    if name.startswith("/dev/") and not os.path.exists(name):
        pytest.skip(f"needs {name}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(HKLError) as info:
        read_hkl(name)
    assert str(info.value) == f"{name}: is {kind}; the HKL file must be a regular file"


def test_read_hkl_refuses_a_line_longer_than_the_cap_without_reading_it_whole(tmp_path):
    path = tmp_path / "zeros.hkl"
    path.write_bytes(b"0 0 0 1\n" + b"\0" * (4 * MAX_LINE_BYTES))  # like a file of zeros: no newline
    with pytest.raises(HKLError, match=f"zeros.hkl line 2: longer than {MAX_LINE_BYTES} bytes"):
        read_hkl(path)


def test_read_hkl_refuses_more_records_than_memory_holds(tmp_path, monkeypatch):
    monkeypatch.setattr(structure_factors, "_BLOCK_RECORDS", 2)
    monkeypatch.setattr(structure_factors.memory, "available_bytes", lambda device: 5 * structure_factors.HKL_BYTES_PER_RECORD)
    path = write(tmp_path, "".join(f"0 0 {i} 1\n" for i in range(10)))
    with pytest.raises(HKLError, match="test.hkl: 6 records by line 6 already need .* more than the .* available"):
        read_hkl(path)


def test_read_hkl_reads_numbers_with_cs_grammar(tmp_path):
    table = read_hkl(write(tmp_path, "0 0 0 0x1p3\n0 0 1 1E1\n"))
    assert table.values[0, 0, :].tolist() == [8.0, 10.0]


def test_hkl_error_is_value_error():
    assert issubclass(HKLError, ValueError)


def test_golden_hkl_parses():
    table = read_hkl(GOLDEN_HKL)
    assert table.count == 15625
    assert (table.h_min, table.h_max, table.k_min, table.k_max, table.l_min, table.l_max) == (-12, 12, -12, 12, -12, 12)
    assert table.values[0, 0, 0] == 185.72
    assert table.values[0, 0, 1] == 60.37
    assert np.isfinite(table.values).all()


# ---------------------------------------------------------------- nearest


def test_nearest_inside_outside_and_no_table():
    values = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4) + 1.0
    sf = StructureFactors(table_from(values, lows=(-1, 2, -3)), default_F=42.0, dtype=torch.float64)
    h0 = torch.tensor([-1.0, 0.0, 0.0, -2.0, 1.0, 0.0, 0.0, 0.0, 0.0, float("nan")])
    k0 = torch.tensor([2.0, 4.0, 3.0, 2.0, 2.0, 1.0, 5.0, 2.0, 2.0, 2.0])
    l0 = torch.tensor([-3.0, 0.0, -1.0, -3.0, -3.0, -3.0, -3.0, -4.0, 1.0, -3.0])
    expected = [values[0, 0, 0], values[1, 2, 3], values[1, 1, 2]] + [42.0] * 7
    got = sf.nearest(h0, k0, l0)
    assert got.shape == h0.shape and got.dtype == torch.float64
    assert got.tolist() == expected

    none = StructureFactors(None, default_F=7.0, dtype=torch.float64)
    got = none.nearest(torch.zeros(2, 3), torch.zeros(1, 3), torch.zeros(3))
    assert got.shape == (2, 3) and torch.all(got == 7.0)


def test_nearest_broadcasts_and_unlisted_entry_is_zero(tmp_path):
    table = read_hkl(write(tmp_path, "0 0 0 5\n2 1 1 9\n"))
    sf = StructureFactors(table, default_F=0.0, dtype=torch.float64)
    got = sf.nearest(torch.tensor([[0.0], [2.0], [1.0]]), torch.tensor([0.0, 1.0]), torch.tensor(1.0))
    assert got.shape == (3, 2)
    assert got.tolist() == [[0.0, 0.0], [0.0, 9.0], [0.0, 0.0]]


# ---------------------------------------------------------------- interpolable


def test_interpolable_boundaries():
    sf = StructureFactors(poly_table(), default_F=0.0, dtype=torch.float64)
    lo = torch.tensor([sf.h_min + 2.0, sf.k_min + 2.0, sf.l_min + 2.0], dtype=torch.float64)
    hi = torch.tensor([sf.h_max - 2.0, sf.k_max - 2.0, sf.l_max - 2.0], dtype=torch.float64)
    mid = (lo + hi) / 2
    assert sf.interpolable(*lo).item() and sf.interpolable(*hi).item() and sf.interpolable(*mid).item()
    for axis in range(3):
        for point, step, allowed in ((lo, -1e-9, False), (hi, 1e-9, False), (lo, 1e-9, True), (hi, -1e-9, True)):
            p = mid.clone()
            p[axis] = point[axis] + step
            assert sf.interpolable(*p).item() is allowed, (axis, point[axis].item(), step)
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    assert not sf.interpolable(nan, mid[1], mid[2]).item()
    assert sf.interpolable(lo[0], mid[1], mid[2].expand(5)).shape == (5,)


def test_interpolable_false_without_table_or_for_small_box():
    none = StructureFactors(None, default_F=3.0, dtype=torch.float64)
    assert not none.interpolable(torch.tensor(0.0), torch.tensor(0.0), torch.tensor(0.0)).item()
    small = StructureFactors(table_from(np.ones((4, 9, 9))), default_F=0.0, dtype=torch.float64)
    h = torch.linspace(-1, 5, 61, dtype=torch.float64)
    assert not small.interpolable(h, torch.tensor(4.0), torch.tensor(4.0)).any()


# ---------------------------------------------------------------- tricubic


def test_tricubic_reproduces_cubic_polynomials_exactly():
    sf = StructureFactors(poly_table(), default_F=0.0, dtype=torch.float64)
    gen = torch.Generator().manual_seed(1)
    h, k, l = interior_points(sf, 2000, gen)
    got = sf.tricubic(h, k, l)
    expected = cubic_poly(h, k, l)
    torch.testing.assert_close(got, expected, rtol=F64_ROUNDING, atol=F64_ROUNDING)

    corners = torch.tensor(
        [[sf.h_min + 2, sf.k_min + 2, sf.l_min + 2], [sf.h_max - 2, sf.k_max - 2, sf.l_max - 2]],
        dtype=torch.float64,
    )
    torch.testing.assert_close(sf.tricubic(*corners.T), cubic_poly(*corners.T), rtol=F64_ROUNDING, atol=F64_ROUNDING)


def test_tricubic_equals_table_at_integer_nodes():
    gen = np.random.default_rng(3)
    table = table_from(gen.normal(100.0, 30.0, size=(9, 8, 10)), lows=(-4, 0, -5))
    sf = StructureFactors(table, default_F=0.0, dtype=torch.float64)
    grid = torch.cartesian_prod(
        torch.arange(sf.h_min + 2, sf.h_max - 1, dtype=torch.float64),
        torch.arange(sf.k_min + 2, sf.k_max - 1, dtype=torch.float64),
        torch.arange(sf.l_min + 2, sf.l_max - 1, dtype=torch.float64),
    )
    h, k, l = grid.T
    expected = sf.nearest(h, k, l)
    torch.testing.assert_close(sf.tricubic(h, k, l), expected, rtol=F64_POLYNOMIAL, atol=F64_ROUNDING)


def test_tricubic_matches_independent_scalar_reference():
    gen = np.random.default_rng(7)
    table = table_from(gen.uniform(0.0, 300.0, size=(11, 9, 10)), lows=(-5, -3, 2))
    sf = StructureFactors(table, default_F=0.0, dtype=torch.float64)
    h, k, l = interior_points(sf, 25, torch.Generator().manual_seed(11))
    got = sf.tricubic(h, k, l)
    expected = torch.tensor([scalar_tricubic(table, *p) for p in zip(h.tolist(), k.tolist(), l.tolist())])
    torch.testing.assert_close(got, expected, rtol=F64_ROUNDING, atol=F64_STRUCTURE_FACTOR_ABS)


def polint_form(x, f, ys):
    """4-point Lagrange at x over nodes f-1..f+2, written as nanoBragg writes it (spec §5.7)."""
    xa = [f - 1.0, f + 0.0, f + 1.0, f + 2.0]
    terms = []
    for i in range(4):
        others = [j for j in range(4) if j != i]
        num = (x - xa[others[0]]) * (x - xa[others[1]]) * (x - xa[others[2]]) * ys[i]
        den = (xa[i] - xa[others[0]]) * (xa[i] - xa[others[1]]) * (xa[i] - xa[others[2]])
        terms.append(num / den)
    return terms[0] + terms[1] + terms[2] + terms[3]


def test_tricubic_is_bitwise_nanobragg_evaluation_order():
    """Same operations in the same order as nanoBragg (l, then k, then h): identical float64 bits."""
    gen = np.random.default_rng(13)
    table = table_from(gen.uniform(0.0, 300.0, size=(10, 10, 10)), lows=(-5, -5, -5))
    sf = StructureFactors(table, default_F=0.0, dtype=torch.float64)
    h, k, l = interior_points(sf, 200, torch.Generator().manual_seed(17))
    got = sf.tricubic(h, k, l).tolist()
    for n, (x, y, z) in enumerate(zip(h.tolist(), k.tolist(), l.tolist())):
        fh, fk, fl = math.floor(x), math.floor(y), math.floor(z)
        block = table.values[fh - 1 + 5 : fh + 3 + 5, fk - 1 + 5 : fk + 3 + 5, fl - 1 + 5 : fl + 3 + 5]
        along_k = [polint_form(y, fk, [polint_form(z, fl, block[i, j]) for j in range(4)]) for i in range(4)]
        assert got[n] == polint_form(x, fh, along_k), n


def test_tricubic_is_not_symmetric_in_axes():
    """A table that varies along one axis only: swapping the axis roles must change the result."""
    values = np.zeros((9, 9, 9))
    values[:, :, :] = (np.arange(9.0) ** 3)[None, None, :]
    sf = StructureFactors(table_from(values), default_F=0.0, dtype=torch.float64)
    x = torch.tensor(3.3, dtype=torch.float64)
    four = torch.tensor(4.0, dtype=torch.float64)
    torch.testing.assert_close(sf.tricubic(four, four, x), x**3, rtol=F64_POLYNOMIAL, atol=0.0)
    torch.testing.assert_close(sf.tricubic(x, four, four), torch.tensor(64.0, dtype=torch.float64), rtol=F64_POLYNOMIAL, atol=0.0)


def test_tricubic_outside_is_finite_and_never_indexes_out_of_bounds():
    sf = StructureFactors(poly_table(), default_F=5.0, dtype=torch.float64)
    h = torch.tensor([-1e30, -7.5, 100.0, float("inf"), float("-inf"), float("nan"), 7.0, 0.5], dtype=torch.float64)
    got = sf.tricubic(h, torch.full_like(h, -20.0), torch.full_like(h, 9.99))
    assert got.shape == h.shape
    assert torch.isfinite(got).all()
    tiny = StructureFactors(table_from([[[2.0]]], lows=(3, 3, 3)), default_F=0.0, dtype=torch.float64)
    assert torch.isfinite(tiny.tricubic(h, h, h)).all()
    none = StructureFactors(None, default_F=5.0, dtype=torch.float64)
    assert none.tricubic(h, h, h).tolist() == [5.0] * h.numel()


def test_tricubic_gradcheck_hkl():
    gen = np.random.default_rng(5)
    table = table_from(gen.uniform(10.0, 200.0, size=(8, 8, 8)), lows=(-3, -3, -3))
    sf = StructureFactors(table, default_F=0.0, dtype=torch.float64)
    h = torch.tensor([-0.6, 0.3, 1.45], dtype=torch.float64, requires_grad=True)
    k = torch.tensor([0.2, -0.7, 1.8], dtype=torch.float64, requires_grad=True)
    l = torch.tensor([1.1, 0.55, -0.25], dtype=torch.float64, requires_grad=True)
    assert sf.interpolable(h, k, l).all()
    assert torch.autograd.gradcheck(sf.tricubic, (h, k, l))


def test_tricubic_gradient_of_cubic_polynomial():
    sf = StructureFactors(poly_table(), default_F=0.0, dtype=torch.float64)
    h, k, l = (t.clone().requires_grad_() for t in interior_points(sf, 50, torch.Generator().manual_seed(2)))
    sf.tricubic(h, k, l).sum().backward()
    with torch.no_grad():
        dh = 2 - h + 0.3 * h**2 + 0.2 * k**3
        dk = l + 0.6 * h * k**2
        dl = k - 0.9 * l**2
    for grad, exact in ((h.grad, dh), (k.grad, dk), (l.grad, dl)):
        torch.testing.assert_close(grad, exact, rtol=F64_GRADIENT, atol=F64_GRADIENT)


def test_tricubic_gradient_wrt_table_values():
    gen = np.random.default_rng(9)
    table = table_from(gen.uniform(10.0, 200.0, size=(6, 6, 6)), lows=(0, 0, 0))
    sf = StructureFactors(table, default_F=0.0, dtype=torch.float64)
    h = torch.tensor([2.3, 3.0, 2.9], dtype=torch.float64)
    k = torch.tensor([2.7, 2.5, 3.0], dtype=torch.float64)
    l = torch.tensor([3.4, 2.0, 2.1], dtype=torch.float64)
    values = sf.values.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda v: sf.with_values(v).tricubic(h, k, l), (values,))
    sf.values.requires_grad_()
    sf.tricubic(h, k, l).sum().backward()
    torch.testing.assert_close(sf.values.grad.sum(), torch.tensor(3.0, dtype=torch.float64))  # partition of unity
    with pytest.raises(ValueError):
        sf.with_values(torch.zeros(6, 6, 5, dtype=torch.float64))


# ---------------------------------------------------------------- devices and dtypes


def test_float32_and_device_neutrality(device):
    table = poly_table()
    sf64 = StructureFactors(table, default_F=1.5, dtype=torch.float64)
    sf32 = StructureFactors(table, default_F=1.5, device=device, dtype=torch.float32)
    h, k, l = interior_points(sf64, 100, torch.Generator().manual_seed(4))
    h32, k32, l32 = (t.to(device=device, dtype=torch.float32) for t in (h, k, l))

    got = sf32.tricubic(h32, k32, l32)
    assert got.dtype == torch.float32 and got.device.type == torch.device(device).type
    torch.testing.assert_close(got.double().cpu(), sf64.tricubic(h, k, l), rtol=FLOAT32_TRICUBIC[0], atol=FLOAT32_TRICUBIC[1])

    mask = sf32.interpolable(h32, k32, l32)
    assert mask.dtype == torch.bool and mask.device.type == torch.device(device).type and mask.all()

    near = sf32.nearest(torch.round(h32), torch.round(k32), torch.round(l32) + 100)
    assert near.dtype == torch.float32 and near.device.type == torch.device(device).type
    assert torch.all(near == 1.5)
    near = sf32.nearest(torch.round(h32), torch.round(k32), torch.round(l32))
    torch.testing.assert_close(near.double().cpu(), sf64.nearest(*(torch.round(t) for t in (h, k, l))))

    none = StructureFactors(None, default_F=2.0, device=device, dtype=torch.float32)
    out = none.tricubic(h32, k32, l32)
    assert out.dtype == torch.float32 and out.device.type == device
