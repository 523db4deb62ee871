"""Imports every pass module so that each registers itself (add new passes here)."""

from hir.passes import set_node_layout  # noqa: F401
from hir.passes.communication import (
    convert_to_communication,  # noqa: F401
    insert_reshardings,  # noqa: F401
)
from hir.passes.memory import (
    hoist_parameter_work,  # noqa: F401
    insert_deallocations,  # noqa: F401
)
from hir.passes.p2p import pipeline as p2p_pipeline  # noqa: F401
from hir.passes.shard import (
    convert_shard_to_hir,  # noqa: F401
    record_shard_signature,  # noqa: F401
    set_grid_shape,  # noqa: F401
)
from hir.passes.streams import (
    expand_stream_loops,  # noqa: F401
    fuse_loops,  # noqa: F401
    reuse_stream_buffers,  # noqa: F401
    stream_lowering,  # noqa: F401
)
from hir.passes.training import (
    recompute,  # noqa: F401
    schedule,  # noqa: F401
)
