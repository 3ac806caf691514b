"""The runner's allocation policy: glibc keeps freed large tensors in the heap only under the policy."""

from __future__ import annotations

import ctypes

import pytest
import torch

from theorylab.core import cpu
from theorylab.core.errors import ConfigError


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo() -> MallInfo2:
    lib = cpu._glibc()
    if lib is None or not hasattr(lib, "mallinfo2"):
        pytest.skip("needs glibc >= 2.33 (mallinfo2)")
    lib.mallinfo2.restype = MallInfo2
    return lib.mallinfo2()


BIG = 64 * 2**20 // 4  # a 64 MiB float32 tensor: above glibc's largest mmap threshold


def test_heap_policy_keeps_freed_blocks_and_system_policy_maps_them():
    # In a fresh process: in this one, earlier tests leave free heap chunks that a later block may reuse, which would
    # hide whether glibc's defaults came back.
    import subprocess
    import sys

    _mallinfo()
    code = (
        """
import ctypes, torch
from theorylab.core import cpu
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
lib = cpu._glibc()
lib.mallinfo2.restype = MallInfo2
BIG = %d
with cpu.heap_allocation(True) as on:
    t = torch.ones(BIG)
    mapped_during = lib.mallinfo2().hblkhd
    del t
    free_after = lib.mallinfo2().fordblks
t = torch.ones(2 * BIG)  # larger than any chunk the heap kept: only glibc's restored defaults can mmap it
print(int(on), mapped_during, free_after, lib.mallinfo2().hblkhd)
"""
        % BIG
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    on, mapped_during, free_after, mapped_after = map(int, out.stdout.split())
    assert on == 1
    # Under the policy the block came from the heap (nothing mmapped for it) and stays there once freed.
    assert free_after >= BIG * 4
    assert mapped_during < BIG * 4
    # glibc defaults again: a fresh mapping. The request is twice the freed block because a block no larger than a
    # free heap chunk may be served from that chunk even under the defaults (it did in about 1 run in 4), which
    # says nothing about the policy.
    assert mapped_after >= 2 * BIG * 4


def test_nested_contexts_restore_only_at_the_outermost():
    with cpu.heap_allocation(True):
        with cpu.heap_allocation(True):
            pass
        assert cpu._active == 1
    assert cpu._active == 0


def test_environment_switch(monkeypatch):
    monkeypatch.setenv(cpu.ENV_VAR, "system")
    with cpu.heap_allocation() as on:
        assert not on
    monkeypatch.setenv(cpu.ENV_VAR, "tcmalloc")
    with pytest.raises(ConfigError, match="THEORYLAB_MALLOC.*allowed: heap, system"):
        cpu.requested_policy()


def test_runner_rejects_a_bad_policy_before_any_work(monkeypatch, tmp_path):
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    monkeypatch.setenv(cpu.ENV_VAR, "jemalloc")
    with pytest.raises(ConfigError, match="THEORYLAB_MALLOC"):
        execute("multi-index-estimators", store=Store(tmp_path))
    assert not any(tmp_path.rglob("meta.json"))


def test_torch_threads_pins_during_a_cpu_run_and_restores_after():
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with cpu.torch_threads(target, "cpu"):
        assert torch.get_num_threads() == target
    assert torch.get_num_threads() == before
    with cpu.torch_threads(target, "cuda"):  # a GPU run keeps the host's count
        assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), cpu.torch_threads(target, "cpu"):
        raise RuntimeError("a failing run restores the count too")
    assert torch.get_num_threads() == before


def test_runner_applies_a_study_s_cpu_threads(tmp_path):
    from theorylab.core import Claims, Preset, StudyConfig, study
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    seen = []

    class Cfg(StudyConfig):
        pass

    presets = {"quick": Preset.of("quick", "test"), "paper": Preset.of("paper", "test")}
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2

    @study(
        "threads-probe",
        title="t",
        paper="p",
        config=Cfg,
        presets=presets,
        claims=Claims("threads-probe", "r"),
        cpu_threads=target,
    )
    def run(cfg, ctx):
        seen.append(torch.get_num_threads())

    execute("threads-probe", store=Store(tmp_path), device="cpu")
    assert seen == [target] and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="cpu_threads"):
        study(
            "threads-bad",
            title="t",
            paper="p",
            config=Cfg,
            presets=presets,
            claims=Claims("threads-bad", "r"),
            cpu_threads=0,
        )


def test_a_thread_cap_bounds_every_later_pin_and_workers_share_the_cores(monkeypatch):
    from theorylab.core.runner import check_workers

    before = torch.get_num_threads()
    monkeypatch.setattr(cpu, "_thread_cap", None)
    try:
        cpu.cap_threads(1)
        assert torch.get_num_threads() == 1
        with cpu.torch_threads(4):
            assert torch.get_num_threads() == 1  # a study's own pin cannot exceed its worker's share
    finally:
        torch.set_num_threads(before)
    monkeypatch.setattr(cpu, "_thread_cap", None)
    with cpu.torch_threads(1):
        assert torch.get_num_threads() == 1
    monkeypatch.setattr("theorylab.core.runner.available_cores", lambda: 2)
    assert check_workers("auto", 31, "cpu") == (2, 1)
    assert check_workers("auto", 1, "cpu") == (1, 2)  # one study: no second process
    assert check_workers(1, 31, "cpu") == (1, 2)
    monkeypatch.setattr("theorylab.core.runner.available_cores", lambda: 16)
    assert check_workers("auto", 31, "cpu") == (8, 2) and check_workers("auto", 3, "cpu") == (3, 5)
    assert check_workers("auto", 31, "cuda") == (1, 16)  # studies on one GPU would share its memory
    for bad in (0, -2, "many"):
        with pytest.raises(ConfigError, match="invalid value for 'workers'"):
            check_workers(bad, 3, "cpu")


def test_errors_survive_a_process_pool():
    import pickle

    from theorylab.core.errors import Diverged, MissingResource

    gap = pickle.loads(pickle.dumps(MissingResource("corpus 'x'", "pip install x")))
    assert (gap.what, gap.fix, str(gap)) == (
        "corpus 'x'",
        "pip install x",
        str(MissingResource("corpus 'x'", "pip install x")),
    )
    nan = pickle.loads(pickle.dumps(Diverged("loss", 7)))
    assert (nan.what, nan.step, str(nan)) == ("loss", 7, "loss is not finite at step 7")
    from theorylab.core.errors import MissingExtra, RemoteError

    extra = pickle.loads(pickle.dumps(MissingExtra("PyTorch Geometric", "graphs")))
    assert type(extra) is MissingExtra and isinstance(extra, ImportError)
    assert str(extra) == str(MissingExtra("PyTorch Geometric", "graphs")) and extra.what == "PyTorch Geometric"
    remote = pickle.loads(pickle.dumps(RemoteError("TwoPartError", "half and half")))
    assert (remote.type_name, str(remote)) == ("TwoPartError", "half and half")


def test_cpu_label_names_the_model_and_its_widest_vector_kind(tmp_path):
    from theorylab.core.cpu import cpu_label

    def label(flags: str) -> str:
        info = tmp_path / "cpuinfo"
        info.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
        return cpu_label(str(info))

    assert label("fpu sse avx2 fma") == "Some CPU, AVX2 only"
    assert label("avx2 avx512f avx512_bf16") == "Some CPU, AVX-512"
    assert label("avx2 avx512f amx_bf16 amx_tile") == "Some CPU, AMX"
    assert cpu_label(str(tmp_path / "absent")) != ""  # off Linux: the platform's own string


def _spin(seconds: float) -> None:
    import time

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.skipif(cpu.available_cores() < 2, reason="needs two cores")
def test_busy_cores_sees_another_process_spinning():
    import multiprocessing

    spinner = multiprocessing.get_context("spawn").Process(target=_spin, args=(6.0,))
    spinner.start()
    try:
        import time

        time.sleep(1.0)  # started and spinning
        busy = cpu.busy_cores(0.3)
    finally:
        spinner.terminate()
        spinner.join()
    assert busy is not None and busy >= 0.7


def test_busy_cores_leaves_out_this_process_and_free_threads_count_the_rest(monkeypatch, tmp_path):
    # two CPUs, both fully busy over the sample; this process used one CPU-second of it: one core is others' work
    samples = iter([{0: (0, 100), 1: (0, 100)}, {0: (100, 200), 1: (100, 200)}])
    own = iter([10.0, 11.0])
    monkeypatch.setattr(cpu, "_cpu_times", lambda stat, cpus: next(samples))
    monkeypatch.setattr(cpu, "_own_cpu_seconds", lambda: next(own))
    monkeypatch.setattr("time.sleep", lambda s: None)
    assert cpu.busy_cores(1.0) == pytest.approx(1.0)
    monkeypatch.setattr(cpu, "available_cores", lambda: 2)
    for busy, threads in ((None, None), (0.2, None), (0.6, 1), (1.0, 1), (2.0, 1)):
        monkeypatch.setattr(cpu, "busy_cores", lambda sample_s=0.1, b=busy: b)
        assert cpu.free_core_threads() == threads
    monkeypatch.setattr(cpu, "busy_cores", lambda sample_s=0.1: 1.0)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert cpu.run_threads(None, "cpu") == (None, "")  # already on one thread: nothing to lower
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    threads, why = cpu.run_threads(None, "cpu")
    assert threads == 1 and "1 of 2 cores busy with other work: running on 1 thread" in why
    assert cpu.run_threads(1, "cpu") == (1, "")  # a study's declared one thread stands
    assert cpu.run_threads(2, "cpu")[0] == 1  # a declared two, on the one free core: one
    monkeypatch.setattr(cpu, "busy_cores", lambda sample_s=0.1: 0.0)
    assert cpu.run_threads(2, "cpu") == (2, "")  # and two when both are free
    assert cpu.run_threads(None, "cuda") == (None, "")
    monkeypatch.setattr(cpu, "_thread_cap", 1)  # a worker of check --workers: its share stands
    assert cpu.run_threads(None, "cpu") == (None, "")


def test_every_core_switch_keeps_the_declared_threads_beside_busy_cores(monkeypatch, tmp_path):
    monkeypatch.setattr(cpu, "_thread_cap", None)
    monkeypatch.setattr(cpu, "available_cores", lambda: 2)
    monkeypatch.setattr(cpu, "busy_cores", lambda sample_s=0.1: 1.0)
    assert cpu.run_threads(2, "cpu")[0] == 1  # unset: the free core only
    monkeypatch.setenv(cpu.CORES_ENV_VAR, "all")
    assert cpu.run_threads(2, "cpu") == (2, "")
    monkeypatch.setenv(cpu.CORES_ENV_VAR, "some")
    with pytest.raises(ConfigError, match="THEORYLAB_CORES.*allowed: free, all"):
        cpu.run_threads(2, "cpu")
    from theorylab.core.runner import execute
    from theorylab.core.store import Store

    with pytest.raises(ConfigError, match="THEORYLAB_CORES"):  # before any work
        execute("multi-index-estimators", store=Store(tmp_path))
    assert not any(tmp_path.rglob("meta.json"))
