"""bagua_torch: bagua's relaxed collectives for PyTorch (doc/pytorch.md).

Three ways in: DDP communication hooks (register(ddp, "q8")), the c10d backend "bagua"
(init_process_group("bagua")), and model averagers / plain tensor calls for custom loops."""
import torch  # noqa: F401 (loads libtorch the usual way before bagua_torch._C links to it)

from . import _C, backend
from ._C import BaguaError
from .averagers import (AsyncAverager, DecentralizedAverager, LowPrecisionDecentralizedAverager,
                        PartialAverager)
from .backend import ProcessGroupOptions
from .fsdp import REDUCE_SCATTER_ALGORITHMS, RelaxedReduceScatter, relax_reduce_scatter
from .hooks import ALGORITHMS, HookState, allreduce_hook, register
from .ops import (SignState, allreduce_, broadcast_, decentralized_average_, partial_average_,
                  reduce_scatter_)
from .runtime import init, shutdown

__version__ = _C.version()

backend.register_backend()

__all__ = [
    "ALGORITHMS", "AsyncAverager", "BaguaError", "DecentralizedAverager", "HookState",
    "LowPrecisionDecentralizedAverager", "PartialAverager", "ProcessGroupOptions",
    "REDUCE_SCATTER_ALGORITHMS",
    "RelaxedReduceScatter", "SignState", "allreduce_", "allreduce_hook", "broadcast_",
    "decentralized_average_", "init", "partial_average_", "reduce_scatter_", "register",
    "relax_reduce_scatter", "shutdown",
]
