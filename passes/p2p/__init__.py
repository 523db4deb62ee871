"""hir-p2p-pipeline (``pipeline.py``): collectives in nvFuser's P2P form and the tensor-parallel
contraction + all-reduce pair as copy-engine pipelines, one rewrite pattern per source
collective (all-gather ``allgather.py``, reduce-scatter ``reduce_scatter.py`` /
``accumulate.py``, all-reduce ``allreduce.py``), built from the shared steps of ``steps.py``
and decided by the analysis of ``analysis.py`` over the cost rules of ``cost.py``."""
