"""A buffer axis split by several mesh axes (MLIR's ``split_axes = [[], [0, 1]]``) and teams
along several mesh axes: the placement arithmetic the verifier and the interpreter share."""

import pytest
import torch

from hir.dialect.sharding import MultiDimMeshError, Sharding
from hir.interpreter.inputs import shard

MESH = (0, 1, 2, 3)


def test_axis_split_by_both_mesh_axes_is_cut_row_major():
    s = Sharding(MESH, mesh_shape=(2, 2), splits=(1, 1))
    assert s.parts(1) == 4 and s.parts(0) == 1
    assert [s.shard_index(d, 1) for d in MESH] == [0, 1, 2, 3]  # device (i, j) holds part 2i + j
    assert s.local_shape([8, 16]) == [8, 4]
    x = torch.arange(16).view(1, 16)
    assert [shard(x, s, d).tolist() for d in MESH] == [
        [[0, 1, 2, 3]],
        [[4, 5, 6, 7]],
        [[8, 9, 10, 11]],
        [[12, 13, 14, 15]],
    ]


def test_team_along_both_mesh_axes_sees_a_1d_split():
    s = Sharding(MESH, mesh_shape=(2, 2), splits=(1, 1))
    assert s.lines((0, 1)) == [(0, 1, 2, 3)]
    assert s.along(2, (0, 1)) == Sharding(MESH, 1)
    assert s.others_local([8, 16], (0, 1)) == [8, 16]
    # along the minor axis only: each line holds a contiguous half of axis 1
    assert s.lines(1) == [(0, 1), (2, 3)]
    assert s.along(2, 1) == Sharding((2, 3), 1) and s.others_local([8, 16], 1) == [8, 8]


def test_lines_without_a_1d_view_say_why():
    with pytest.raises(MultiDimMeshError, match="minor to mesh axes \\[0\\]"):
        Sharding(MESH, mesh_shape=(2, 2), splits=(1, 1)).along(0, 0)
    with pytest.raises(MultiDimMeshError, match="split buffer axes \\[0, 1\\]"):
        Sharding(MESH, mesh_shape=(2, 2), splits=(0, 1)).along(0, (0, 1))
