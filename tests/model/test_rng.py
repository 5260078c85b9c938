"""Tests for detsim.model.rng: ran1 streams, mosaic domains, random misset and Poisson noise (spec §4.3, §4.6, §6.3).

Reference values marked "C reference" come from the nanoBragg.c reference program (bl831 commit 455534a, gcc 12.2 -O2,
glibc 2.36). Single functions (ran1, mosaic_rotation_umat, umat2misset, poidev, gaussdev, gammln) were called inside the
compiled program under gdb, for example ``call ((float(*)(long*))ran1)($p)`` with ``*$p = -7``; floats were printed
with ``%.9g`` (exact for float32) and doubles with ``%.17g``. Whole-program values come from the command lines quoted.
"""

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from _tolerances import F64_ROUNDING, F64_SAME_OPERATIONS, GAMMLN_VS_LGAMMA, MOMENT_SIGMAS, MOSAIC_SPREAD_SLACK
from detsim.model.rng import (
    Ran1,
    gammln,
    gaussdev,
    mosaic_rotation,
    mosaic_umats,
    poidev,
    poisson_noise_image,
    random_misset_angles,
)

GOLDEN = Path(__file__).parents[1] / "golden" / "s01_noise_intfile_scale"


def f32(text):
    """The float32 value that a ``%.9g`` print of a C float denotes, as a Python float."""
    return float(np.float32(text))


def draws(gen, n):
    return [gen.next() for _ in range(n)]


def sha256(array, dtype):
    return hashlib.sha256(np.ascontiguousarray(array, dtype=dtype).tobytes()).hexdigest()


def mixed_means(n):
    """Float32 Poisson means cycling through all poidev branches; plain double arithmetic, so portable."""
    means = []
    for k in range(n):
        u = (k * 7919 % 10007) / 10007.0
        kind = k % 5
        if kind == 0:
            xm = 0.0 if k % 3 == 0 else 12.0 * u
        elif kind == 1:
            xm = 12.0 + 188.0 * u
        elif kind == 2:
            xm = 200.0 + 999800.0 * u
        elif kind == 3:
            xm = 1.0e6 * (1.0 + 100.0 * u)
        else:
            xm = 12.0 * u
        means.append(float(np.float32(xm)))
    return means


def rotation_angle(u):
    return math.acos(min(1.0, max(-1.0, (np.trace(u) - 1.0) / 2.0)))


# ---------------------------------------------------------------- ran1


def test_ran1_matches_c_reference_stream():
    # C reference: ran1 with idum = -7, draws 1-5, 1000 and 3000.
    gen = Ran1(-7)
    values = draws(gen, 3000)
    expected_start = ["0.1228365", "0.428469986", "0.643754244", "0.467895657", "0.688501418"]
    assert values[:5] == [f32(v) for v in expected_start]
    assert values[999] == f32("0.0983658582")
    assert values[2999] == f32("0.584159851")
    assert all(0.0 < v < 1.0 for v in values)
    assert all(float(np.float32(v)) == v for v in values)


def test_ran1_second_stream_matches_c_reference():
    # C reference: ran1 with idum = -99, draws 1-12.
    expected = [
        "0.872106552", "0.26556927", "0.457605928", "0.165948987", "0.456849664", "0.582227647",
        "0.990498543", "0.250344187", "0.543379664", "0.308687657", "0.121762216", "0.631218195",
    ]
    assert draws(Ran1(-99), 12) == [f32(v) for v in expected]


def test_ran1_non_negative_seeds_start_from_one():
    # A fresh stream with idum >= 0 reloads its table from idum = 1, like the first stream of a C run.
    reference = draws(Ran1(-1), 40)
    assert draws(Ran1(0), 40) == reference
    assert draws(Ran1(5), 40) == reference
    assert draws(Ran1(-2), 40) != reference


def test_ran1_degenerate_seed_reloads_every_draw():
    # idum = -(2**31 - 1) reaches state 0: C returns exactly 0.0, then reloads from idum = 1 (C reference).
    values = draws(Ran1(-(2**31 - 1)), 3)
    assert values == [0.0, f32("0.415999353"), f32("0.091964893")]


def test_ran1_caps_at_rnmx():
    # This seed puts state 2**31 - 2 into the shuffle table; its draw (the 8th) is float32(1 - 4.7e-10) = 1.0,
    # which ran1 caps to float32(1 - 1.2e-7) (C reference: idum = -1372501266, draws 7-9).
    values = draws(Ran1(-1372501266), 9)
    assert values[6:] == [f32("0.992301822"), f32("0.999999881"), f32("0.00896261446")]


def test_ran1_rejects_out_of_range_seed():
    with pytest.raises(ValueError, match="seed"):
        Ran1(2**31 + 1)
    with pytest.raises(TypeError):
        Ran1(1.5)


def test_ran1_independent_objects_do_not_share_state():
    a, b = Ran1(-11), Ran1(-11)
    first = draws(a, 300)
    assert draws(b, 300) == first
    assert draws(a, 5) == draws(Ran1(-11), 305)[300:]


# ---------------------------------------------------------------- mosaic domains and misset


def test_mosaic_umats_match_c_reference():
    # C reference: mosaic_rotation_umat(1 deg, ...) twice after the first call, idum = -12345678 (the default seed).
    expected = np.array(
        [
            [
                [0.9998636859219358, -0.01594877166007503, 0.004271563781034543],
                [0.015952848100370585, 0.9998723201694524, -0.0009219525164856842],
                [-0.004256314378327948, 0.0009899704495282635, 0.9999904518276271],
            ],
            [
                [0.9999657443853005, 0.0056663083387967425, 0.006033490346516197],
                [-0.005733674275452004, 0.999920758686324, 0.011207199804992794],
                [-0.005969508795105471, -0.011241409963865434, 0.9999189945524435],
            ],
        ]
    )
    umats = mosaic_umats(math.radians(1.0), 3, 12345678)
    assert umats.shape == (3, 3, 3) and umats.dtype == np.float64
    assert np.array_equal(umats[0], np.eye(3))
    assert np.array_equal(umats[1:], expected)


def test_mosaic_umats_match_c_reference_in_bulk():
    # C reference: 2000 calls of mosaic_rotation_umat(90.0, ...) with idum = -7; sha256 of calls 2-2000 as
    # little-endian float64. About one domain in six changes in the last bit if the Rodrigues products are
    # grouped differently from the C code.
    umats = mosaic_umats(90.0, 2000, 7)
    assert sha256(umats[1:], "<f8") == "adeb95966e4160cb90fc84c4d59731644721785f48fc914f07a4640e7cd00672"


def test_mosaic_angle_uses_single_precision_powf():
    # C reference: call 1315 of mosaic_rotation_umat(90.0, ...) with idum = -7 (also inside the digest above). Here
    # glibc's powf differs by one float32 ulp from the correctly rounded power, so only powf reproduces it.
    expected = np.array(
        [
            [0.8131848630172114, 0.3438232811910104, 0.4695912370037656],
            [-0.5405195306501862, 0.14698347005950785, 0.8283927187723031],
            [0.215798553158685, -0.9274596545620263, 0.30536793154210723],
        ]
    )
    assert np.array_equal(mosaic_umats(90.0, 1315, 7)[1314], expected)


def test_mosaic_domain_zero_consumes_its_draws():
    gen = Ran1(-77)
    mosaic_rotation(0.2, gen)
    second = mosaic_rotation(0.2, gen)
    umats = mosaic_umats(0.2, 2, 77)
    assert np.array_equal(umats[1], second)
    assert np.array_equal(mosaic_umats(0.2, 5, 77)[:2], umats)
    assert np.array_equal(mosaic_umats(0.2, 1, 77), np.eye(3)[None])
    with pytest.raises(ValueError):
        mosaic_umats(0.2, 0, 77)


def test_mosaic_umats_are_rotations_within_the_spread():
    spread = 0.05
    umats = mosaic_umats(spread, 400, 2024)
    eye = np.broadcast_to(np.eye(3), umats.shape)
    assert np.allclose(umats @ np.swapaxes(umats, 1, 2), eye, atol=F64_SAME_OPERATIONS)
    assert np.allclose(np.linalg.det(umats), 1.0, atol=F64_SAME_OPERATIONS)
    angles = np.array([rotation_angle(u) for u in umats[1:]])
    assert angles.max() <= spread * (1 + MOSAIC_SPREAD_SLACK)
    assert angles.max() > 0.9 * spread
    assert np.median(angles) > 0.5 * spread


def test_mosaic_rotation_is_right_handed_about_its_axis():
    gen = Ran1(-5)
    u = mosaic_rotation(0.3, gen)
    antisym = (u - u.T) / 2.0
    axis = np.array([antisym[2, 1], antisym[0, 2], antisym[1, 0]])
    assert np.allclose(u @ axis, axis, atol=F64_SAME_OPERATIONS)
    # The axis is built from the first two draws: (sqrt(1-r2^2) sin(pi r1), sqrt(1-r2^2) cos(pi r1), r2).
    r1, r2 = (2.0 * v - 1.0 for v in draws(Ran1(-5), 2))
    xyrad = math.sqrt(1 - r2 * r2)
    expected = np.array([xyrad * math.sin(math.pi * r1), xyrad * math.cos(math.pi * r1), r2])
    assert np.allclose(axis / np.linalg.norm(axis), expected, atol=F64_ROUNDING)


def test_random_misset_angles_match_nanobragg_runs():
    # C reference, printed in degrees with %f by:
    #   nanoBragg -misset_seed S -misset random -default_F 100 -cell 70 70 70 90 90 90 -N 2 -detpixels 8 -nonoise -nopgm
    # (-misset_seed must come first: its name also matches "-misset", which would reset the angles to fixed values.)
    printed = {
        1: "4.662957 -11.844979 17.622548",
        42: "-11.585887 56.207689 -1.333374",
        2024: "-2.476907 20.871565 -16.158110",
    }
    for seed, degrees in printed.items():
        assert " ".join("%f" % math.degrees(a) for a in random_misset_angles(seed)) == degrees


def test_random_misset_angles_bit_exact():
    # C reference: umat2misset(mosaic_rotation_umat(90.0, ..., idum = -12345678)).
    assert random_misset_angles(12345678) == (0.28306314140091587, 0.12021676276562732, -1.0002071505078745)
    # For this seed the C routine's second row normalisation changes the last bit.
    assert random_misset_angles(24) == (-1.0325832159142196, 0.21949434998711653, 0.8508751682967936)


# ---------------------------------------------------------------- gammln, gaussdev, poidev


def test_gammln_matches_c_reference_and_lgamma():
    expected = {
        0.5: 0.5723649263381958,
        3.7: 1.4280723333358765,
        13.0: 19.987215042114258,
        100.5: 361.435546875,
        1e20: 4.5051702577405415e21,
    }
    for x, value in expected.items():
        assert gammln(x) == value, x
    for x in (0.5, 1.7, 12.0, 31.0, 1234.5, 2e6):
        assert gammln(x) == pytest.approx(math.lgamma(x), **GAMMLN_VS_LGAMMA)


def test_poidev_matches_c_reference_across_branches():
    # C reference: poidev on this sequence of means, one stream with idum = -4242. The two 5e6 draws use the
    # Gaussian branch (the second takes the cached spare); 1000001 leaves a spare that gaussdev then returns.
    means = [0.0, 0.5, 3.0, 11.999999, 12.0, 30.0, 1000.0, 5e6, 5e6, 1e6, 1000001.0, 2.5, 30.0]
    expected = [0, 0, 5, 12, 17, 27, 995, 4997369, 4996561.5, 999903, "999739.312", 2, 27]
    gen = Ran1(-4242)
    assert [poidev(xm, gen) for xm in means] == [f32(str(v)) for v in expected]
    assert gaussdev(gen) == f32("0.187995449")


def test_poidev_matches_c_reference_in_bulk():
    # C reference: poidev over mixed_means(4000), one stream with idum = -8086; sha256 of the float32 results.
    means = mixed_means(4000)
    gen = Ran1(-8086)
    values = np.array([poidev(xm, gen) for xm in means], dtype="<f4")
    assert values[:12].tolist() == [0, 155, 583236, 38414076, 5, 11, 169, 538750, 34075480, 1, 14, 137]
    assert float(values.sum(dtype=np.float64)) == 41219504236.875
    assert sha256(values, "<f4") == "af376801a3ebd13a760d9e555048994b4d83ae2addcb1e47d5bdd35f5d9f8ea4"


def test_poidev_rounds_the_running_product_to_float32():
    # Each mean makes exp(-xm) equal the float32 product of the stream's first two draws, which lies just below
    # their exact product: the float32 product stops the loop at 1, an exact one would not (C reference: 1).
    for seed, xm in ((3, 0.6906290650367737), (13, 1.8751678466796875), (14, 0.6108592748641968)):
        assert poidev(xm, Ran1(-seed)) == 1.0, seed


def test_gaussdev_matches_c_reference_and_caches_its_spare():
    # C reference: gaussdev with idum = -99.
    expected = ["-0.381855279", "0.606110215", "-1.24749267", "-0.158318013", "2.29782009"]
    gen = Ran1(-99)
    assert [gaussdev(gen) for _ in range(5)] == [f32(v) for v in expected]

    once, twice = Ran1(-99), Ran1(-99)
    gaussdev(once)
    gaussdev(twice)
    gaussdev(twice)
    assert twice.next() == once.next()


def test_gaussdev_moments():
    gen = Ran1(-2718)
    values = np.array([gaussdev(gen) for _ in range(20000)])
    assert abs(values.mean()) < MOMENT_SIGMAS / math.sqrt(values.size)
    assert values.var() == pytest.approx(1.0, abs=MOMENT_SIGMAS * math.sqrt(2 / values.size))


@pytest.mark.parametrize("xm", [3.0, 30.0, 2e6])
def test_poidev_moments(xm):
    n = 20000
    gen = Ran1(-1000 - int(xm))
    values = np.array([poidev(xm, gen) for _ in range(n)])
    assert abs(values.mean() - xm) < 5 * math.sqrt(xm / n)
    # Sample-variance standard error for a Poisson law: sqrt((mu4 - var^2) / n) with mu4 = xm (1 + 3 xm).
    var_err = math.sqrt((xm * (1 + 3 * xm) - xm * xm) / n)
    assert abs(values.var() - xm) < 5 * var_err
    if xm < 1e6:
        assert np.array_equal(values, np.round(values))
    else:
        assert not np.array_equal(values, np.round(values))
    if xm == 3.0:
        p0 = math.exp(-xm)
        assert abs(np.mean(values == 0) - p0) < 5 * math.sqrt(p0 * (1 - p0) / n)


def test_poidev_non_positive_mean_takes_one_draw():
    gen = Ran1(-8)
    assert poidev(0.0, gen) == 0.0
    assert poidev(-3.0, gen) == 0.0
    assert gen.next() == draws(Ran1(-8), 3)[2]


# ---------------------------------------------------------------- noise image


def test_noise_image_matches_golden_bit_for_bit():
    # Golden case s01: nanoBragg ... -noisefile noise.img -seed 31415 (adc 40).
    # Its stdout says "19879 photons on noise image (0 overloads)".
    image = np.fromfile(GOLDEN / "image.bin", dtype="<f4").reshape(128, 128)
    expected = np.fromfile(GOLDEN / "noise.img", dtype="<u2", offset=512).reshape(128, 128)
    noise, overloads = poisson_noise_image(image, seed=31415, adc=40.0)
    assert noise.dtype == np.uint16 and noise.shape == (128, 128)
    assert overloads == 0
    assert np.array_equal(noise, expected)
    assert int(noise.sum(dtype=np.int64)) - 40 * noise.size == 19879


def test_noise_roi_matches_nanobragg_run_with_gaussian_and_overloads():
    # C reference: nanoBragg -default_F 100 -cell 70 70 70 90 90 90 -misset 15 -5 22 -lambda 1.0 -N 5 -distance 100
    #   -pixel 0.1 -detpixels 128 -fluence 1.25932015286227086e33 -roi 92 101 106 107 -noisefile noise.img
    #   -seed 2718 -adc 25 -nopgm -floatfile image.bin
    # Only rows 106-107, columns 92-101 are rendered; these are their float and noise values.
    roi_values = np.array(
        [
            [20893.361, 82433.32, 30224.924, 98044.85, 629613.3],
            [1.0969119e06, 850915.6, 282840.47, 20076.068, 9738.4],
            [16970.758, 44412.508, 9322.75, 175493.56, 860298.6],
            [1.4550242e06, 1.1339709e06, 352822.62, 15713.728, 48950.848],
        ],
        dtype=np.float32,
    ).reshape(2, 10)
    expected_roi = [
        [20897, 65535, 29962, 65535, 65535, 65535, 65535, 65535, 20345, 9922],
        [17000, 44578, 9301, 65535, 65535, 65535, 65535, 65535, 15814, 49306],
    ]
    image = np.zeros((128, 128), dtype=np.float32)
    image[106:108, 92:102] = roi_values
    noise, overloads = poisson_noise_image(image, seed=2718, adc=25.0, roi=(92, 101, 106, 107))
    assert overloads == 11
    assert noise[106:108, 92:102].tolist() == expected_roi
    outside = noise.copy()
    outside[106:108, 92:102] = 0
    assert not outside.any()


def test_noise_roi_visits_pixels_in_raster_order():
    image = np.random.default_rng(1).gamma(2.0, 3.0, size=(20, 30)).astype(np.float32)
    roi = (4, 21, 3, 15)
    noise, _ = poisson_noise_image(image, seed=9, adc=40.0, roi=roi)
    crop, _ = poisson_noise_image(image[3:16, 4:22], seed=9, adc=40.0)
    assert np.array_equal(noise[3:16, 4:22], crop)
    assert noise[:3].sum() == 0 and noise[16:].sum() == 0 and noise[:, :4].sum() == 0 and noise[:, 22:].sum() == 0

    full, _ = poisson_noise_image(image, seed=9, adc=40.0)
    top, _ = poisson_noise_image(image, seed=9, adc=40.0, roi=(0, 29, 0, 6))
    assert np.array_equal(top[:7], full[:7])


def test_noise_adc_overloads_and_reproducibility():
    image = np.array([[0.0, 70000.0, 5.0], [1e7, 0.0, 65495.5]], dtype=np.float32)
    a, overloads = poisson_noise_image(image, seed=3, adc=40.0)
    assert overloads >= 2
    assert a[0, 0] == 40 and a[1, 1] == 40
    assert a[0, 1] == 65535 and a[1, 0] == 65535
    b, _ = poisson_noise_image(image.astype(np.float64), seed=3, adc=40.0)
    assert np.array_equal(a, b)
    c, _ = poisson_noise_image(np.full((8, 8), 50.0, dtype=np.float32), seed=3, adc=0.0)
    d, _ = poisson_noise_image(np.full((8, 8), 50.0, dtype=np.float32), seed=4, adc=0.0)
    assert not np.array_equal(c, d)

    low, overloads = poisson_noise_image(np.zeros((2, 2), dtype=np.float32), seed=3, adc=-5.0)
    assert overloads == 0 and not low.any()


def test_noise_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        poisson_noise_image(np.zeros(5), seed=1)
    image = np.zeros((4, 4), dtype=np.float32)
    image[3, 3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        poisson_noise_image(image, seed=1)
    noise, _ = poisson_noise_image(image, seed=1, roi=(0, 2, 0, 2))
    assert noise[:3, :3].tolist() == [[40] * 3] * 3
