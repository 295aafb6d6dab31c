"""ktune profile --ops's sitecustomize.py (src/cli/torch_ops): against a stand-in torch package,
it turns NVTX op ranges on once torch is imported, never before, never breaks the program, and
still runs the user's own sitecustomize."""
import os
import subprocess
import sys
from pathlib import Path

HOOK = Path(__file__).resolve().parents[2] / "src" / "cli" / "torch_ops"

FAKE_TORCH = '''
import sys, types
calls = []
class _State:
    NVTX = "NVTX"
def ProfilerConfig(*args):
    return args
def _ExperimentalConfig():
    return "experimental"
def _enable_profiler(config, activities):
    calls.append(("enable", config, activities))
def _run_on_profiler_start():
    calls.append(("start",))
profiler = types.SimpleNamespace(ProfilerConfig=ProfilerConfig, ProfilerState=_State,
                                 _ExperimentalConfig=_ExperimentalConfig,
                                 _enable_profiler=_enable_profiler,
                                 _run_on_profiler_start=_run_on_profiler_start)
autograd = types.SimpleNamespace(profiler=profiler)
'''


def run(tmp_path, program, ops="1", torch_source=FAKE_TORCH, user_site=None):
    (tmp_path / "torch").mkdir(exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text(torch_source)
    path = [str(HOOK), str(tmp_path)]
    if user_site is not None:
        (tmp_path / "user").mkdir(exist_ok=True)
        (tmp_path / "user" / "sitecustomize.py").write_text(user_site)
        path.append(str(tmp_path / "user"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "KTUNE_TRACE_OPS": ops}
    return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=60)


def test_op_ranges_turn_on_when_torch_is_imported_without_shapes(tmp_path):
    r = run(tmp_path, "import sys; assert 'torch' not in sys.modules\n"
                      "import torch; print(torch.calls)")
    assert r.returncode == 0, r.stderr
    calls = eval(r.stdout)
    assert calls[0] == ("start",)
    kind, config, activities = calls[1]
    assert kind == "enable" and config[0] == "NVTX" and config[1] is False  # no shapes
    assert activities == set()


def test_nothing_happens_without_the_setting(tmp_path):
    r = run(tmp_path, "import torch; print(torch.calls)", ops="0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_a_torch_it_cannot_drive_gets_one_line_and_the_program_runs(tmp_path):
    r = run(tmp_path, "import torch; print('ran')", torch_source="autograd = None\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ran"
    assert r.stderr.count("\n") == 1
    assert "could not turn on PyTorch's NVTX op ranges" in r.stderr


def test_the_users_own_sitecustomize_still_runs(tmp_path):
    r = run(tmp_path, "import builtins; print(builtins.USER_SITE)",
            user_site="import builtins\nbuiltins.USER_SITE = 'yes'\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "yes"
