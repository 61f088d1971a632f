"""Prints, on every rank, one line `ENV {json}` with the variables a launcher gave it, then exits 0
(no process group: the environment alone), and with
$LAUNCH_ENV_DIR set also to the file <that folder>/<RANK>.json. `launch_env.py torch` also reports what `import torch`
gives (under `tensorplug exec`: tensorplug)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (the watchdog)

NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
         "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
         "TORCHELASTIC_RESTART_COUNT", "OMP_NUM_THREADS", "PYTHONUNBUFFERED")
report = {name: os.environ.get(name) for name in NAMES}
report["PATH0"] = os.environ.get("PATH", "").split(os.pathsep)[0]
report["argv"] = sys.argv[1:]
if "torch" in sys.argv[1:]:
    import torch
    report["torch"] = torch.__name__
print("ENV " + json.dumps(report))
if os.environ.get("LAUNCH_ENV_DIR"):     # unprefixed output can interleave mid-line: a file per rank
    with open(os.path.join(os.environ["LAUNCH_ENV_DIR"], f"{report['RANK']}.json"), "w") as f:
        json.dump(report, f)
