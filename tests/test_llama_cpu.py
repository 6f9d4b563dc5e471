"""Whether llama.cpp's extra CPU buffer types are used: not on a CPU with AMX (they crash
llama-cpp-python 0.3.36 there), unless ``KBAGENT_LLAMA_EXTRA_BUFTS`` says otherwise."""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.llm.llama import cpu_has_amx, extra_buffer_types

AMX_FLAGS = "fpu vme sse sse2 avx2 avx512f amx_bf16 amx_tile amx_int8"


def _cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: X\nflags\t\t: {flags}\n\n"
                    f"processor\t: 1\nflags\t\t: {flags}\n", encoding="utf-8")
    return path


def test_amx_is_read_from_the_flags_line(tmp_path: Path) -> None:
    assert cpu_has_amx(_cpuinfo(tmp_path, AMX_FLAGS))
    assert not cpu_has_amx(_cpuinfo(tmp_path, "fpu sse sse2 avx2 avx512f"))
    # a flag that only starts like it is not it; an unreadable file is no AMX
    assert not cpu_has_amx(_cpuinfo(tmp_path, "fpu amx_tilex"))
    assert not cpu_has_amx(tmp_path / "missing")


def test_extra_buffer_types_off_with_amx_unless_told() -> None:
    assert extra_buffer_types(env="", amx=False)
    assert not extra_buffer_types(env="", amx=True)
    assert extra_buffer_types(env="1", amx=True)
    assert not extra_buffer_types(env="0", amx=False)
    assert not extra_buffer_types(env="yes", amx=True)  # not 0/1: the CPU decides
