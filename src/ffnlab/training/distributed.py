"""Process-group setup for ``torchrun`` (DistributedDataParallel); a no-op for one process."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def pick_device(requested: str, local_rank: int = 0) -> str:
    if requested == "auto":
        return f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    if requested == "cuda":
        return f"cuda:{local_rank}"
    return requested


def setup(requested_device: str) -> DistInfo:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    device = pick_device(requested_device, local)
    if device.startswith("cuda"):
        from ffnlab.errors import require

        require(torch.cuda.is_available(), f"device {device} requested but this torch build has no CUDA device; "
                                           "use --device cpu or install a CUDA build of torch")
        require(int(device.split(":")[1]) < torch.cuda.device_count(), f"no CUDA device {device}")
        torch.cuda.set_device(device)
    if world > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
    return DistInfo(rank, world, local, device)


def barrier(info: DistInfo) -> None:
    if info.enabled:
        import torch.distributed as dist

        dist.barrier()


def broadcast_str(value: str, info: DistInfo) -> str:
    """Rank 0's ``value`` on every rank."""
    if not info.enabled:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def mean_across(value: torch.Tensor, info: DistInfo) -> torch.Tensor:
    if info.enabled:
        import torch.distributed as dist

        value = value.clone()
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
        value /= info.world_size
    return value


def teardown(info: DistInfo) -> None:
    if info.enabled:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
