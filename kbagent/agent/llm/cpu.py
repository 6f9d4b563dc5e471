"""How many threads llama.cpp should generate with: one per physical core.

llama-cpp-python's own default for ``n_threads`` is ``cpu_count() // 2``, which assumes
two hardware threads per core. On a machine without them (the 2-core laptops and VMs
this project runs on) it generates with one thread while the other core idles: with 2
threads the 1.5B model wrote 34 tokens a second instead of 24 (BENCHMARKS.md, "Issue 44:
names the knowledge base never mentions"). llama.cpp's own programs count physical cores
the same way. Prompts are evaluated with every logical CPU either way
(``n_threads_batch``).
"""

from __future__ import annotations

import os
from pathlib import Path

SYSFS = Path("/sys/devices/system/cpu")


def physical_cores(sysfs: Path = SYSFS) -> int:
    """The physical cores among the CPUs this process may run on: CPUs that share a
    package and a core id are one core. Where the topology cannot be read (not Linux),
    llama-cpp-python's guess, half the logical CPUs."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            cores.add(((topology / "physical_package_id").read_text().strip(),
                       (topology / "core_id").read_text().strip()))
        except OSError:
            return max(1, (os.cpu_count() or 2) // 2)
    return max(1, len(cores)) if cores else max(1, (os.cpu_count() or 2) // 2)
