"""The user's ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES read as ROCm reads them
(zluda_runner.host.visibility): ROCclr's Device::init (ROCm/clr rocclr/device/rocm/rocdevice.cpp) takes
HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES, and ends the list at the first entry that is not a plain
index of a GPU (``-1``, ``abc``, ``7``), hiding it and every entry after it; ROCr's RvdFilter
(ROCm/ROCR-Runtime src/core/runtime/amd_filter_device.cpp) filters first, and shows no GPU for an empty
value. A value that leaves no GPU is said, naming the variable and its value, never read as 'no choice'."""

from __future__ import annotations

import pytest

from tests.golden import assert_golden
from zluda_runner.host.visibility import FIX, gpu_visibility, restated_env, workload_target

NO_GPU = [
    {"HIP_VISIBLE_DEVICES": "-1"}, {"HIP_VISIBLE_DEVICES": "abc"}, {"CUDA_VISIBLE_DEVICES": "-1"},
    {"HIP_VISIBLE_DEVICES": "", "CUDA_VISIBLE_DEVICES": "abc"}, {"HIP_VISIBLE_DEVICES": "7"},
    {"HIP_VISIBLE_DEVICES": " 1"}, {"HIP_VISIBLE_DEVICES": "01"}, {"HIP_VISIBLE_DEVICES": ",1"},
    {"ROCR_VISIBLE_DEVICES": ""}, {"ROCR_VISIBLE_DEVICES": "-1"}, {"ROCR_VISIBLE_DEVICES": "abc"},
    {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"},
]


@pytest.mark.parametrize("env", NO_GPU)
def test_a_value_that_leaves_no_gpu_says_so_naming_the_variable_and_its_value(env: dict[str, str]) -> None:
    vis = gpu_visibility(env, 2)
    assert vis.chosen and vis.visible == () and vis.none_visible
    (warning,) = vis.warnings
    var, value = next((k, v) for k, v in reversed(list(env.items())) if v or k == "ROCR_VISIBLE_DEVICES")
    assert f"{var}={value!r}" in warning and warning.endswith(f": {FIX}")  # the value, and the hint last
    assert ("ROCm/clr" if var != "ROCR_VISIBLE_DEVICES" else "ROCm/ROCR-Runtime") in warning  # its source
    target, _ = workload_target(["igpu", "dgpu"], env)
    assert target is None


def test_what_holds_on_any_host_is_said_without_the_gpu_count() -> None:
    """The Windows registry's order is not HIP's: -1 and abc still hide every GPU, 1 is not judged."""
    assert gpu_visibility({"HIP_VISIBLE_DEVICES": "-1"}, None).visible == ()
    assert gpu_visibility({"HIP_VISIBLE_DEVICES": "abc"}, None).warnings
    assert gpu_visibility({"HIP_VISIBLE_DEVICES": "1"}, None).warnings == ()
    assert gpu_visibility({"HIP_VISIBLE_DEVICES": "1"}, None).visible is None


@pytest.mark.parametrize(("env", "visible"), [
    ({}, (0, 1, 2)),
    ({"HIP_VISIBLE_DEVICES": ""}, (0, 1, 2)),  # empty: no choice (ROCclr reads ordinals[0] == '\0')
    ({"HIP_VISIBLE_DEVICES": "2,0"}, (2, 0)),
    ({"HIP_VISIBLE_DEVICES": "1,1,0"}, (1, 0)),  # a repeat is skipped by ROCclr
    ({"HIP_VISIBLE_DEVICES": "1,"}, (1,)),
    ({"CUDA_VISIBLE_DEVICES": "1"}, (1,)),
    ({"HIP_VISIBLE_DEVICES": "2", "CUDA_VISIBLE_DEVICES": "1"}, (2,)),  # HIP's wins
    ({"ROCR_VISIBLE_DEVICES": "1,2", "HIP_VISIBLE_DEVICES": "1"}, (2,)),
    ({"ROCR_VISIBLE_DEVICES": " 0x2 , 0"}, (2, 0)),  # ROCr: trimmed, strtol base 0
])
def test_a_valid_choice_is_followed_as_rocm_follows_it(env: dict[str, str], visible: tuple[int, ...]) -> None:
    vis = gpu_visibility(env, 3)
    assert vis.visible == visible and vis.warnings == ()


def test_a_list_cut_short_keeps_what_comes_before_and_warns() -> None:
    vis = gpu_visibility({"HIP_VISIBLE_DEVICES": "1,abc,0"}, 3)
    assert vis.visible == (1,)
    (warning,) = vis.warnings
    assert "HIP_VISIBLE_DEVICES='1,abc,0'" in warning and warning.endswith(f": {FIX}")
    assert workload_target(["a", "b", "c"], {"HIP_VISIBLE_DEVICES": "1,abc,0"})[0] == "b"
    assert gpu_visibility({"ROCR_VISIBLE_DEVICES": "1,1,0"}, 3).visible == (1,)  # ROCr: a repeat ends it


def test_a_uuid_is_not_guessed() -> None:
    vis = gpu_visibility({"HIP_VISIBLE_DEVICES": "GPU-4b2c1a9f8d3e6f7a"}, 2)
    assert vis.visible is None and "UUID" in vis.warnings[0] and "GPU-4b2c1a9f8d3e6f7a" in vis.warnings[0]
    assert workload_target(["a", "b"], {"HIP_VISIBLE_DEVICES": "GPU-4b2c1a9f8d3e6f7a"})[0] is None


def test_restated_for_judging_in_plain_indices() -> None:
    assert restated_env({"X": "1"}, 2) == {"X": "1"}  # no choice: as it is
    assert restated_env({"ROCR_VISIBLE_DEVICES": "1,2", "HIP_VISIBLE_DEVICES": "1"}, 3) == {
        "HIP_VISIBLE_DEVICES": "2"}
    assert restated_env({"HIP_VISIBLE_DEVICES": "-1"}, 2) == {"HIP_VISIBLE_DEVICES": "2"}  # past the last
    assert restated_env({"HIP_VISIBLE_DEVICES": "GPU-x"}, 2) == {"HIP_VISIBLE_DEVICES": "2"}  # unknown: none


def test_a_huge_value_is_read_bounded() -> None:
    vis = gpu_visibility({"HIP_VISIBLE_DEVICES": "0," * 1_000_000}, 2)
    assert vis.visible == (0,)


def test_each_warning_says_the_entry_rocm_stops_at_and_what_the_workload_is_left() -> None:
    """The warnings, whole: why each list ends (the entry and ROCm's rule), what is left (no GPU, GPU 1
    only, not known for a UUID), the source and the hint."""
    cases = [(env, 2) for env in NO_GPU] + [({"HIP_VISIBLE_DEVICES": "1,abc,0"}, 3),
                                           ({"HIP_VISIBLE_DEVICES": "GPU-4b2c1a9f8d3e6f7a"}, 2)]
    lines = [f"{env} of {count}: {w}" for env, count in cases for w in gpu_visibility(env, count).warnings]
    assert len(lines) == len(cases)
    assert_golden("host-visibility-warnings", "\n".join(lines) + "\n")
