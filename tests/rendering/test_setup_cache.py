"""Setups kept for reuse: the digest of a configuration's content, and the bounded cache."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from detsim.model.config import CrystalConfig, DetectorConfig, SimulationConfig
from detsim.model.structure_factors import HKLTable
from detsim.rendering.setup_cache import SetupCache, config_key


def _config(mask=None, values=None, cell_c: float = 34.0) -> SimulationConfig:
    values = np.full((2, 2, 2), 10.0) if values is None else values
    table = HKLTable(h_min=0, k_min=0, l_min=0, values=values, count=values.size, source="t.hkl")
    return SimulationConfig(crystal=CrystalConfig(cell=(30, 32, cell_c, 90, 90, 90), hkl=table),
                            detector=DetectorConfig(fpixels=3, spixels=2, mask=mask))


def test_equal_content_has_one_key_and_any_change_another():
    mask = np.ones((2, 3), dtype=np.uint16)
    key = config_key(_config(mask.copy()))
    assert key is not None and key == config_key(_config(mask.copy()))
    changed = mask.copy()
    changed[1, 2] = 0
    values = np.full((2, 2, 2), 10.0)
    values[1, 1, 1] = np.nextafter(10.0, 11.0)
    wider = replace(_config(None), detector=replace(_config(None).detector, fpixels=4))
    others = [_config(changed), _config(None), _config(mask, values=values),
              _config(mask, cell_c=np.nextafter(34.0, 35.0)), _config(mask.astype(np.int32)), wider]
    assert len({key, *map(config_key, others)}) == 1 + len(others)


def test_a_configuration_holding_a_tensor_has_no_key():
    config = _config(cell_c=torch.tensor(34.0, requires_grad=True))
    assert config_key(config) is None


def test_the_cache_keeps_the_most_recently_used_within_its_bounds():
    cache = SetupCache(entries=2, max_bytes=100)
    cache.put("a", 1, 10)
    cache.put("b", 2, 10)
    assert cache.get("a") == 1  # now "b" is the least recently used
    cache.put("c", 3, 10)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    cache.put("d", 4, 95)  # past the byte bound: the older ones go
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (None, None, 4)
    cache.put("e", 5, 101)  # larger than the whole bound: not kept, nothing else dropped
    assert (cache.get("d"), cache.get("e"), len(cache)) == (4, None, 1)
