"""Sharding's pending sums (``partial``, the per-mesh-axis view ``on`` / ``with_placement`` and
the device-axis ``buffer_placement``): the placement vocabulary the shard bridge uses."""

import pytest
from torch_mlir import ir

from hir.dialect.context import new_context
from hir.dialect.sharding import PARTIAL, Sharding, sharding_of


def test_per_mesh_axis_view():
    s = Sharding.of(range(4), (2, 2), [None, 1], partial=[0])
    assert [s.on(0), s.on(1)] == [PARTIAL, 1]
    assert s.with_placement([0], None) == Sharding.of(range(4), (2, 2), [None, 1])
    assert s.with_placement([1], PARTIAL).partial == (0, 1) and not s.with_placement([1], PARTIAL).is_split
    assert Sharding.of(range(4), (2, 2), [None, None]).with_placement([0, 1], 0).splits == (0, 0)
    assert "a sum pending on mesh axes [0]" in s.describe()


def test_uneven_bounds_stay_with_their_split():
    s = Sharding(range(2), 0, offsets={0: [0, 3, 8]})
    assert s.with_placement([0], PARTIAL) == Sharding(range(2), None, partial=[0])
    assert Sharding.of(range(4), (2, 2), [0, None], {0: [0, 1, 2]}).with_placement([1], None).bounds(0) == (0, 1, 2)


def test_buffer_placement_is_a_leading_device_axis():
    s = Sharding.of(range(4), (2, 2), [None, 1], partial=[0])
    assert s.buffer_placement() == Sharding.of(range(4), (2, 2), [0, 2])
    even = Sharding(range(2), 1)
    assert even.buffer_placement() is even
    with new_context(), ir.Location.unknown():
        with pytest.raises(ValueError, match="no #hir.shard form"):
            s.attr()
        buffer = ir.MemRefType.get(
            [4, 8, 16], ir.F32Type.get(), memory_space=Sharding(range(4), None, partial=[0]).buffer_placement().attr()
        )
        assert sharding_of(buffer) == Sharding(range(4), 0)


def test_a_sum_pends_on_mesh_axes_that_split_nothing():
    with pytest.raises(ValueError, match="split nothing"):
        Sharding(range(2), 0, partial=[0])
    with pytest.raises(ValueError, match="split nothing"):
        Sharding(range(2), None, partial=[1])
