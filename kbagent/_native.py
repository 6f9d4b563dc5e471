"""Native-library load order fix (imported first by ``kbagent/__init__.py``).

The usearch wheel statically links libstdc++ and exports its symbols. If it is
imported before the system ``libstdc++.so.6`` is in the process, llama.cpp
later fails to load any model ("error loading model vocabulary:
std::bad_cast"), because the two copies disagree on ``std::locale`` facet ids.
Loading the system libstdc++ globally first makes every library bind to one
copy. A test (tests/test_native_order.py) guards this in a fresh process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys


def preload_libstdcxx() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):  # no system libstdc++: nothing to reconcile
        ctypes.CDLL("libstdc++.so.6", mode=os.RTLD_GLOBAL)


preload_libstdcxx()
