"""llama.cpp's generation threads: one per physical core, read from the CPU topology."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbagent.agent.llm.cpu import physical_cores

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")


def _sysfs(tmp_path: Path, cores: dict[int, tuple[int, int]]) -> Path:
    for cpu, (package, core) in cores.items():
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    return tmp_path


def test_hardware_threads_of_one_core_count_once(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    # every CPU this process may use: two per core (hyper-threading) ...
    paired = _sysfs(tmp_path / "paired", {c: (0, i // 2) for i, c in enumerate(cpus)})
    assert physical_cores(paired) == (len(cpus) + 1) // 2
    # ... or one per core, as on the 2-core machines here: every CPU generates
    single = _sysfs(tmp_path / "single", {c: (0, i) for i, c in enumerate(cpus)})
    assert physical_cores(single) == len(cpus)
    # the same core id in two packages is two cores
    two = _sysfs(tmp_path / "two", {c: (i % 2, i // 2) for i, c in enumerate(cpus)})
    assert physical_cores(two) == len(cpus)


def test_an_unreadable_topology_falls_back_to_half_the_cpus(tmp_path: Path) -> None:
    assert physical_cores(tmp_path / "missing") == max(1, (os.cpu_count() or 2) // 2)
