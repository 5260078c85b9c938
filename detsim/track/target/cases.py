"""The cases a target is rendered on: its spec's folder of cases, or detsim's golden cases (its spec's
subset of them, or all).

Input: a :class:`~.spec.TargetSpec` and detsim's checkout. Output: golden cases whose reference images
were read (a case of the target's own folder needs a manifest giving its shape), or a
:class:`~detsim.track.base.golden.GoldenError` naming what is missing, before anything is built. The golden
folder is the checkout's, else the one ``DETSIM_GOLDEN_DIR`` or the working directory gives, else the
installed suite's.
"""

from __future__ import annotations

from pathlib import Path

from detsim.track.base.fresh import HERE
from detsim.track.base.golden import GoldenCase, GoldenError, discover, find_case, golden_dir, load_cases
from detsim.track.target.spec import TargetSpec


def golden_folder(root: Path) -> Path:
    """detsim's golden cases: of ``root``, else as :func:`~detsim.track.base.golden.golden_dir` finds them,
    else beside this package."""
    for where in (root, None, HERE):
        try:
            return golden_dir(where)
        except GoldenError:
            continue
    raise GoldenError(f"no golden cases found in {root} (run from detsim's checkout or give --root)")


def target_cases(spec: TargetSpec, root: Path) -> list[GoldenCase]:
    """Every case the target is rendered on, each with a readable reference image of a known shape."""
    if spec.case_folder is not None:
        cases = discover(spec.case_folder)
    else:
        folder = golden_folder(root)
        cases = [find_case(c, folder) for c in spec.cases] if spec.cases else load_cases(folder)
    for case in cases:
        case.reference()
    return cases


def target_case(spec: TargetSpec, case_id: str, root: Path) -> GoldenCase:
    """One case by id or unique prefix: of the spec's folder, else a golden case (any: a criterion may name a
    case outside the spec's subset)."""
    if spec.case_folder is None:
        case = find_case(case_id, golden_folder(root))
    else:
        matches = [c for c in discover(spec.case_folder) if c.id == case_id or c.id.startswith(case_id)]
        if len(matches) != 1:
            raise GoldenError(f"{case_id!r} is {'ambiguous' if matches else 'not a case'} in {spec.case_folder}")
        case = matches[0]
    case.reference()
    return case
