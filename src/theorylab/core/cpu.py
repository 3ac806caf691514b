"""CPU run-time policy: keep large freed tensors in the process heap (glibc) instead of unmapping them.

Why: glibc's ``malloc`` serves every block above its mmap threshold (at most 32 MiB, 128 KiB by default) with a
fresh ``mmap`` and returns it to the kernel on ``free``. PyTorch allocates a new output tensor for nearly every op,
so a training step that makes a 4096 x 2048 float32 activation (32 MiB, the FF block of the attention-rank
paper's Fig. 1 point) pays one page fault per 4 KiB page, every op, every step: measured on a 2-core Xeon, a
4096x64 @ 64x2048 matmul took 26 ms with fresh pages and 10 ms with reused ones, an out-of-place ReLU on it 18 ms
against 3 ms, and the whole training step 147 ms against 88 ms (``benchmarks/toy_transformer_training.py``
reports the ratio). With ``M_MMAP_MAX = 0`` every block comes from the heap and, with a large
``M_TRIM_THRESHOLD``, freed blocks stay there for the next op: the same effect jemalloc's or tcmalloc's caching has
under ``LD_PRELOAD``, with nothing to install. The price is that the process keeps its peak heap until it exits.

The runner applies :func:`heap_allocation` around every study run; ``THEORYLAB_MALLOC=system`` (or
``heap_allocation(False)``) leaves the C library's defaults alone. Off glibc (macOS, musl, Windows) it does
nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from contextlib import contextmanager
from typing import Iterator

from theorylab.core.errors import ConfigError

# glibc's mallopt parameters (malloc.h) and their defaults, restored on exit.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
DEFAULT_MMAP_MAX = 65536
DEFAULT_TRIM_THRESHOLD = 128 * 1024
HEAP_TRIM_THRESHOLD = 2**30  # keep up to 1 GiB of freed heap for reuse
ENV_VAR = "THEORYLAB_MALLOC"
CHOICES = ("heap", "system")

_libc: ctypes.CDLL | None = None
_active = 0  # nesting depth: only the outermost context restores the defaults


def _glibc() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            lib.gnu_get_libc_version  # noqa: B018 - raises AttributeError off glibc (musl)
            _libc = lib
        except (OSError, AttributeError):
            return None
    return _libc


def requested_policy() -> str:
    """The policy ``$THEORYLAB_MALLOC`` asks for ('heap' when unset); a bad value is a one-line error."""
    value = os.environ.get(ENV_VAR, "heap").strip().lower() or "heap"
    if value not in CHOICES:
        raise ConfigError(f"invalid value for '{ENV_VAR}': {value!r}; allowed: {', '.join(CHOICES)}")
    return value


def set_heap_allocation(enabled: bool) -> bool:
    """Switch the policy on (``True``) or back to glibc's defaults; returns whether glibc accepted it."""
    lib = _glibc()
    if lib is None:
        return False
    if enabled:
        return bool(lib.mallopt(M_MMAP_MAX, 0)) and bool(lib.mallopt(M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD))
    ok = bool(lib.mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)) and bool(lib.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD))
    lib.malloc_trim(0)  # hand the kept blocks back to the kernel
    return ok


@contextmanager
def heap_allocation(enabled: bool | None = None) -> Iterator[bool]:
    """Run the block under the heap policy (``enabled=None``: as ``$THEORYLAB_MALLOC`` says); yields whether it is
    on. Nested uses are cheap; the outermost restores glibc's defaults (note: an explicit trim threshold also
    stops glibc's dynamic mmap threshold from growing, so 'defaults' means the documented static ones)."""
    global _active
    want = requested_policy() == "heap" if enabled is None else enabled
    if not want or _glibc() is None:
        yield False
        return
    if _active == 0:
        set_heap_allocation(True)
    _active += 1
    try:
        yield True
    finally:
        _active -= 1
        if _active == 0:
            set_heap_allocation(False)


_thread_cap: int | None = None  # set in a worker of a parallel check: its share of the cores


def cap_threads(n: int) -> None:
    """Give this process ``n`` torch intra-op threads and keep every later :func:`torch_threads` at or below it (a
    worker of ``theorylab check --workers``: two studies side by side on 2 cores get one thread each)."""
    global _thread_cap
    import torch

    _thread_cap = max(1, int(n))
    torch.set_num_threads(_thread_cap)


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@contextmanager
def torch_threads(n: int | None, device_type: str = "cpu") -> Iterator[None]:
    """Run with ``n`` torch intra-op threads when the run is on the CPU, and restore the previous count after.

    Why: a study whose ops are all tiny (a d = 64 model on 4 tokens, 6 x 6 matrices, small FFTs) loses more to
    thread start-up and synchronisation than it gains on 2 cores, and a shared box makes that worse; such a study
    declares ``@study(..., cpu_threads=1)`` and the runner applies it here. ``n = None`` (or a GPU run) leaves the
    count alone."""
    if n is None or device_type != "cpu":
        yield
        return
    import torch

    if _thread_cap is not None:
        n = min(n, _thread_cap)

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


BASE_BYTES = 600e6
"""A run's memory before its own arrays: the interpreter, torch, NumPy, pandas, matplotlib (measured ~0.45 GB); the
floor of every study's ``memory`` estimate."""


def available_memory() -> int | None:
    """Bytes of memory this machine can give a new allocation now (Linux ``MemAvailable``, capped by a cgroup limit
    when there is one); None where neither can be read."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < (1 << 60):
            try:
                used = int(
                    open(
                        path.replace("memory.max", "memory.current").replace("limit_in_bytes", "usage_in_bytes")
                    ).read()
                )
            except (OSError, ValueError):
                used = 0
            avail = min(avail if avail is not None else 1 << 62, int(text) - used)
        break
    return avail


def cpu_label(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU in words for a timing's record, e.g. ``"AMD EPYC, AVX-512"``: its model name and its widest vector
    kind (``AMX``, ``AVX-512`` or ``AVX2 only``), which decide what a timing means (bf16 is fast only with AMX or
    AVX512-BF16). The platform's processor string where ``/proc/cpuinfo`` is not there (macOS, Windows)."""
    import platform

    fields: dict[str, str] = {}
    try:
        with open(cpuinfo) as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("model name", "flags") and key.strip() not in fields:
                    fields[key.strip()] = value.strip()
    except OSError:
        return platform.processor() or "unknown CPU"
    flags = set(fields.get("flags", "").split())
    isa = "AMX" if "amx_tile" in flags else "AVX-512" if "avx512f" in flags else "AVX2 only"
    return f"{fields.get('model name', 'unknown CPU')}, {isa}"


def _cpu_times(stat: str, cpus: set[int]) -> dict[int, tuple[int, int]]:
    """``{cpu: (busy, total)}`` jiffies of the allowed CPUs from a ``/proc/stat`` text."""
    times = {}
    with open(stat) as fh:
        for line in fh:
            name, *values = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                continue
            ticks = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal
            idle = ticks[3] + ticks[4]
            times[int(name[3:])] = (sum(ticks) - idle, sum(ticks))
    return times


def _own_cpu_seconds() -> float:
    """CPU seconds of every thread of this process so far."""
    t = os.times()
    return t.user + t.system


def busy_cores(sample_s: float = 0.1, stat: str = "/proc/stat") -> float | None:
    """How many of this process's cores other processes keep busy now: the busy fraction of each allowed CPU over
    ``sample_s`` seconds, summed, less this process's own use (its threads may still be spinning after earlier
    work). None where ``/proc/stat`` cannot be read (macOS, Windows)."""
    import time

    try:
        cpus = set(os.sched_getaffinity(0))
        before, own_before = _cpu_times(stat, cpus), _own_cpu_seconds()
        time.sleep(sample_s)
        after, own_after = _cpu_times(stat, cpus), _own_cpu_seconds()
    except (OSError, AttributeError, ValueError):
        return None
    busy = 0.0
    for cpu, (b1, t1) in after.items():
        b0, t0 = before.get(cpu, (b1, t1))
        if t1 > t0:
            busy += (b1 - b0) / (t1 - t0)
    return max(0.0, busy - (own_after - own_before) / sample_s)


def free_core_threads(sample_s: float = 0.1) -> int | None:
    """Intra-op threads for a CPU run on a shared machine: the cores that no other process keeps busy (at least
    one), or None when every core is free or the load cannot be read.

    Why: torch's threads meet at a barrier after every op, so a run with as many threads as cores waits at each op
    for the thread whose core another process holds. On 2 cores with one kept busy by a spin loop,
    bilinear-attention-operator's quick preset took 126 s against 23 s idle (5.5x); on the one free core it takes
    about its one-thread time, at most twice the idle two-thread time. The runner applies it (:func:`run_threads`) to
    a study that declares no ``cpu_threads``, or more than are free, outside ``check --workers`` (whose workers
    share the cores out already)."""
    cores = available_cores()
    if cores < 2:
        return None
    busy = busy_cores(sample_s)
    if busy is None:
        return None
    free = max(1, cores - int(busy + 0.5))
    return free if free < cores else None


CORES_ENV_VAR = "THEORYLAB_CORES"
CORES_CHOICES = ("free", "all")


def requested_cores() -> str:
    """Which cores a run may use, as ``$THEORYLAB_CORES`` asks: 'free' (unset: the free ones, see
    :func:`run_threads`) or 'all' (every core, even those other work keeps busy); a bad value is a one-line error."""
    value = os.environ.get(CORES_ENV_VAR, "free").strip().lower() or "free"
    if value not in CORES_CHOICES:
        raise ConfigError(f"invalid value for '{CORES_ENV_VAR}': {value!r}; allowed: {', '.join(CORES_CHOICES)}")
    return value


def run_threads(declared: int | None, device_type: str = "cpu") -> tuple[int | None, str]:
    """``(threads, why)`` for one study run: on a CPU where other processes keep some cores busy, the free ones
    (:func:`free_core_threads`, with ``why`` saying so) when they are fewer than the study would run on (its
    declared ``cpu_threads``, else torch's current count); else the declared count (None: torch's own). Inside
    ``check --workers`` (a thread cap is set) the worker's share stands, and ``THEORYLAB_CORES=all`` keeps the
    declared count whatever the load (:func:`requested_cores`)."""
    import torch

    if device_type != "cpu" or _thread_cap is not None or declared == 1 or requested_cores() == "all":
        return declared, ""
    free = free_core_threads()
    if free is None or free >= (declared if declared is not None else torch.get_num_threads()):
        return declared, ""
    cores = available_cores()
    return free, (
        f"{cores - free} of {cores} cores busy with other work: running on {free} thread{'s' if free > 1 else ''} "
        "(threads waiting for a busy core would slow every op)"
    )
