"""Configuration checks (detsim.model.config): each field's type and range on construction, and derived quantities
that double precision cannot hold."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

from detsim.commandline.arguments import ArgumentError
from detsim.commandline.argv_reader import parse_argv
from detsim.model import config
from detsim.model.config import (
    BeamConfig, ConfigError, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig, SourcePoint, derived,
)
from detsim.model.structure_factors import read_hkl


@pytest.mark.parametrize("compute", [
    lambda: 1e200 ** 2,  # Python raises OverflowError where C gives inf
    lambda: int(math.inf),
    lambda: 1.0 / (1e-320 * 1e-6),  # a divisor that underflowed to 0
    lambda: 1e300 * 1e300,  # inf without an exception
])
def test_derived_refuses_what_overflows_naming_it(compute):
    with pytest.raises(ConfigError, match="^the thing overflows double precision$"):
        derived("the thing", compute)


def test_derived_returns_what_fits():
    assert derived("the thing", lambda: 2.0 ** 1000) == 2.0 ** 1000
    assert derived("the thing", lambda: (1, 2)) == (1, 2)


def test_a_mosaic_spread_beyond_float32_is_refused():
    # nanoBragg computes the mosaic angle in float32: 1e300 degrees became inf, then NaN rotations
    with pytest.raises(ConfigError, match="^-mosaic 1e\\+300 degrees overflows the float32 of the mosaic angle$"):
        CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=1, mosaic_spread_deg=1e300, mosaic_domains=2)
    CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=1, mosaic_spread_deg=1e40, mosaic_domains=2)


# -- every field's type and range, checked on construction ------------------------------------------

CELL = (100, 100, 100, 90, 90, 90)


def test_every_field_of_every_configuration_type_says_what_it_takes():
    for kind, takes in config.TAKES.items():
        assert set(takes) == {f.name for f in fields(kind)}, kind.__name__


@pytest.mark.parametrize("build,message", [
    (lambda: CrystalConfig(cell=CELL, hkl="P1.hkl"),
     r"^CrystalConfig\.hkl takes an HKL table \(detsim\.read_hkl\(path\) reads an h k l F file into one\) or None, "
     r"got str 'P1\.hkl'$"),
    (lambda: CrystalConfig(cell=CELL, default_F="100"), r"^CrystalConfig\.default_F takes a number .*got str '100'$"),
    (lambda: CrystalConfig(cell="100 100 100 90 90 90"), r"^CrystalConfig\.cell takes 6 numbers"),
    (lambda: CrystalConfig(cell=CELL, Na=2.5), r"^CrystalConfig\.Na takes a whole number"),
    (lambda: CrystalConfig(cell=CELL, misset_deg=(1, 2, "3")), r"^CrystalConfig\.misset_deg takes 3 numbers"),
    (lambda: CrystalConfig(cell=CELL, shape="round"), r"^CrystalConfig\.shape takes a CrystalShape \(.*ROUND"),
    (lambda: CrystalConfig(cell=CELL, interpolate="yes"), r"^CrystalConfig\.interpolate takes True or False"),
    (lambda: DetectorConfig(fpixels=10.0), r"^DetectorConfig\.fpixels takes an int, got float 10\.0$"),
    (lambda: DetectorConfig(convention="xds"), r"^DetectorConfig\.convention takes a Convention"),
    (lambda: DetectorConfig(roi=(0, 1.5, 0, 1)), r"^DetectorConfig\.roi takes 4 ints"),
    (lambda: DetectorConfig(curved=1), r"^DetectorConfig\.curved takes True or False, got int 1$"),
    (lambda: BeamConfig(lambda_A=None), r"^BeamConfig\.lambda_A takes a number .*got NoneType None$"),
    (lambda: BeamConfig(sources=[SourcePoint((1.0, 0.0, 0.0), 1.0)]), r"^BeamConfig\.sources takes a tuple of"),
    (lambda: SamplingConfig(phisteps=True), r"^SamplingConfig\.phisteps takes an int or None, got bool True$"),
    (lambda: SimulationConfig(crystal=CELL), r"^SimulationConfig\.crystal takes a CrystalConfig"),
], ids=["hkl", "default_F", "cell", "Na", "misset", "shape", "interpolate", "fpixels", "convention", "roi", "curved",
        "lambda", "sources", "phisteps", "crystal"])
def test_a_field_of_the_wrong_type_is_refused_naming_it_and_what_it_takes(build, message):
    with pytest.raises(ConfigError, match=message):
        build()


def test_an_hkl_table_numbers_and_tensors_are_taken_where_the_engine_takes_them(tmp_path):
    import numpy as np
    import torch

    path = tmp_path / "P1.hkl"
    path.write_text("0 0 1 10\n1 0 0 20\n")
    table = read_hkl(path)
    x = torch.tensor(40.0, dtype=torch.float64, requires_grad=True)
    crystal = CrystalConfig(cell=(x, 40, np.float64(40), 90, 90, 90), hkl=table, Na=torch.tensor(4.0),
                            Nb=np.int64(3), misset_deg=(x, 0.0, 1))
    assert crystal.hkl is table and crystal.cell[0] is x
    DetectorConfig(fpixels=np.int32(8), spixels=8, distance_mm=x, xbeam_mm=torch.tensor(1.0),
                   mask=np.ones((8, 8)))
    BeamConfig(lambda_A=torch.tensor(1.0, dtype=torch.float64))


@pytest.mark.parametrize("build,argv,config_message,flag_message", [
    (lambda v: DetectorConfig(fpixels=v), ["-detpixels_f"], "fpixels", "-detpixels_f must be >= "),
    (lambda v: CrystalConfig(cell=CELL, Na=v), ["-N"], "-Na must be >= ", "-N must be >= "),
    (lambda v: CrystalConfig(cell=CELL, mosaic_domains=v, mosaic_spread_deg=1), ["-mosaic_dom"],
     "-mosaic_domains must be >= ", "-mosaic_dom must be >= "),
    (lambda v: SamplingConfig(nanobragg_threads=v), ["-nanobragg_threads"], "-nanobragg_threads must be >= ",
     "-nanobragg_threads must be >= "),
], ids=["pixels", "cells", "domains", "threads"])
def test_the_api_and_the_command_line_share_each_least_value(build, argv, config_message, flag_message):
    minimum = {"-detpixels_f": config.MIN_PIXELS, "-N": config.MIN_CELLS, "-mosaic_dom": config.MIN_MOSAIC_DOMAINS,
               "-nanobragg_threads": config.MIN_NANOBRAGG_THREADS}[argv[0]]
    build(minimum)
    with pytest.raises(ConfigError, match=config_message):
        build(minimum - 1)
    with pytest.raises(ArgumentError, match=f"^{flag_message}{minimum}"):
        parse_argv(["-cell", "100", "-default_F", "1", argv[0], str(minimum - 1)])
    parse_argv(["-cell", "100", "-default_F", "1", argv[0], str(minimum)])
