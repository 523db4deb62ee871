"""``hir-run --trace FILE``: one run under ``torch.profiler``, written as a Chrome trace."""

import sys

from hir.outputs import captured_fd2
from hir.tools.cli_common import write_atomically


def traced_run(program, inputs, path: str) -> list:
    """Run once under torch.profiler (CPU activity, plus CUDA kernels and copies with their
    streams on cuda) and write a Chrome trace (chrome://tracing, ui.perfetto.dev)."""
    import torch  # imports torch: the CLI starts without it
    from torch.profiler import ProfilerActivity, profile  # loaded on first use only

    cuda = program.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    # The profiler (kineto) writes "USDT:" / "STAGE:" lines straight to fd 2: dropped; what
    # the run itself printed there is passed on.
    with captured_fd2() as captured:
        with profile(activities=activities) as prof:
            outputs = program(inputs)
            if cuda:
                torch.cuda.synchronize(program.device)
    sys.stderr.write(
        "".join(line for line in "".join(captured).splitlines(keepends=True) if not line.startswith(PROFILER_LINES))
    )
    write_atomically(path, prof.export_chrome_trace)
    return outputs


PROFILER_LINES = ("USDT:", "STAGE:")
