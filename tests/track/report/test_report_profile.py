"""The differential callgrind profile on synthetic annotate output; aten ops counted per call site, and their
difference between two runs."""

from __future__ import annotations

import xml.dom.minidom

import torch

from detsim.track.report.profile import count_ops, diff_ops, diff_profiles, format_op_changes, format_profile_diff, \
    parse_annotate, short_name, short_site, svg_bars

OLD = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
3,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                file:function
--------------------------------------------------------------------------------
2,000,000 (66.67%)  ???:void c10::function_ref<void (char**, long const*, long, long)>::callback_fn<at::native::AVX2::VectorizedLoop2d<at::native::(anonymous namespace)::mul_kernel(at::TensorIteratorBase&)::{lambda()#2}> >(long, char**, long const*, long, long) [/x/libtorch_cpu.so]
1,000,000 (33.33%)  ./malloc/./malloc/malloc.c:_int_free [/usr/lib/libc.so.6]
"""
NEW = OLD.replace("3,000,000 (100.0%)", "5,500,000 (100.0%)") + \
    "2,000,000 (36.36%)  ???:mkl_vml_kernel_dExp_L9HAynn [/x/libtorch_cpu.so]\n" + \
    "  500,000 ( 9.09%)  ./malloc/./malloc/malloc.c:_int_malloc [/usr/lib/libc.so.6]\n"


def test_annotate_rows_are_read_without_the_total():
    counts = parse_annotate(OLD)
    assert sum(counts.values()) == 3_000_000
    assert len(counts) == 2


def test_the_change_is_sorted_by_share_and_names_the_kernel():
    diff = diff_profiles(parse_annotate(OLD), parse_annotate(NEW))
    assert diff["change"] == 2_500_000
    top = diff["rows"][0]
    assert top["name"] == "mkl_vml_kernel_dExp_L9HAynn" and top["share"] == 0.8
    assert [r["delta"] for r in diff["rows"]] == [2_000_000, 500_000]
    lines = format_profile_diff(diff)
    assert lines[0].startswith("instructions 3,000,000 -> 5,500,000: +2.50 M Ir (+83.3%)")
    assert lines[1] == "  +2.00 M Ir (80% of the rise) mkl_vml_kernel_dExp_L9HAynn"


def test_a_fall_lists_what_shrank_first():
    diff = diff_profiles(parse_annotate(NEW), parse_annotate(OLD))
    assert diff["rows"][0]["delta"] == -2_000_000
    assert "of the fall" in format_profile_diff(diff)[1]


def test_template_callbacks_shorten_to_their_kernel():
    entry = next(iter(parse_annotate(OLD)))
    assert short_name(entry) == "at::native::mul_kernel (…)"
    assert short_name("./malloc/./malloc/malloc.c:_int_free [/usr/lib/libc.so.6]") == "_int_free"
    assert short_name("at::foo::bar") == "at::foo::bar"


def test_the_picture_is_well_formed_svg_with_one_bar_per_row():
    diff = diff_profiles(parse_annotate(OLD), parse_annotate(NEW))
    svg = svg_bars(diff["rows"], "title <&>")
    doc = xml.dom.minidom.parseString(svg)
    assert len(doc.getElementsByTagName("rect")) == 2


def _render(extra: bool):
    x = torch.linspace(0, 1, 64, dtype=torch.float64)
    y = x * 2
    if extra:
        y = y + torch.exp(x)
    return y


def test_ops_are_counted_with_their_elements_and_call_site():
    rows = count_ops(lambda: _render(False))
    mul = [r for r in rows if r["op"] == "aten.mul.Tensor"]
    assert mul and mul[0]["elements"] == 64 and mul[0]["calls"] == 1
    assert "in _render" in mul[0]["site"]


def test_the_diff_puts_the_new_op_first_with_its_call_site():
    changes = diff_ops(count_ops(lambda: _render(False)), count_ops(lambda: _render(True)))
    assert {c["op"] for c in changes} == {"aten.exp.default", "aten.add.Tensor"}  # the planted exp and its add
    exp = next(c for c in changes if c["op"] == "aten.exp.default")
    assert exp["delta"] == 64 and exp["calls_old"] == 0 and "in _render" in exp["site"]
    assert "+64 elements (+1 call) aten.exp.default at " in "\n".join(format_op_changes(changes))


def test_sites_match_across_folders_and_lines():
    where = "/tmp/a/detsim/rendering/engine.py:12 in render"
    assert short_site(where) == "detsim/rendering/engine.py:12 in render"
    assert short_site(where, line=False) == short_site("/other/detsim/rendering/engine.py:99 in render", line=False) \
        == "detsim/rendering/engine.py in render"
    old = [{"op": "aten.add.Tensor", "site": "detsim/e.py:1 in f", "calls": 1, "elements": 8}]
    new = [{"op": "aten.add.Tensor", "site": "detsim/e.py:5 in f", "calls": 1, "elements": 8}]
    assert diff_ops(old, new) == []
