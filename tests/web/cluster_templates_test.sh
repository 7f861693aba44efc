#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What can be tried of the launchers of volseg web without Slurm, Jupyter
# or Open OnDemand (docs/web.md, "What was tried"): the shell is sound; the
# Slurm script run with srun replaced by mpirun against the real volseg
# prints a tunnel and an address that answers; the OnDemand templates render
# (Ruby's ERB) into valid shell and YAML; the Jupyter config loads.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$here/scripts/cluster
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; if [ -n "${job:-}" ]; then kill "$job" 2> /dev/null || true; fi' EXIT

bash -n "$cluster/volseg-web.slurm"
bash -n "$cluster/ood/volseg_web/template/before.sh.erb"
echo "ok: shell syntax"

/usr/bin/python3 - "$cluster" <<'PY'
import sys, types, yaml
cluster = sys.argv[1]
for name in ("manifest.yml", "form.yml"):
    yaml.safe_load(open(f"{cluster}/ood/volseg_web/{name}"))
config = types.SimpleNamespace(ServerProxy=types.SimpleNamespace())
code = open(f"{cluster}/jupyter/jupyter_server_config.py").read()
exec(compile(code, "jupyter_server_config.py", "exec"), {"get_config": lambda: config})
servers = config.ServerProxy.servers
entry = servers["volseg"]
cmd = entry["command"]
assert "{port}" in cmd and cmd[cmd.index("volseg"):][:2] == ["volseg", "web"], entry
assert len(entry["environment"]["VOLSEG_WEB_TOKEN"]) >= 16
assert entry["launcher_entry"]["path_info"].endswith(entry["environment"]["VOLSEG_WEB_TOKEN"])
print("ok: YAML and the Jupyter config")
PY

# jupyter-server-proxy's own traits check the entry's keys and types where a
# Python with it is named (python3 -m venv V && V/bin/pip install jupyter-server-proxy).
if [ -n "${JSP_PYTHON:-}" ]; then
  "$JSP_PYTHON" - "$cluster" <<'PY'
import sys, types
from jupyter_server_proxy.config import ServerProcess, ServerProxy, make_server_process
config = types.SimpleNamespace(ServerProxy=types.SimpleNamespace())
code = open(f"{sys.argv[1]}/jupyter/jupyter_server_config.py").read()
exec(compile(code, "jupyter_server_config.py", "exec"), {"get_config": lambda: config})
for name, entry in config.ServerProxy.servers.items():
    unknown = set(entry) - set(ServerProcess.class_trait_names())
    assert not unknown, f"keys jupyter-server-proxy does not know: {unknown}"
    make_server_process(name, entry, ServerProxy())
print("ok: the Jupyter entry against jupyter-server-proxy's traits")
PY
else
  echo "skipped: JSP_PYTHON (a Python with jupyter-server-proxy) not set"
fi

if command -v ruby > /dev/null; then
  ood=$cluster/ood/volseg_web
  ruby -rerb -rostruct -e '
    context = OpenStruct.new(volume: "/data/v.nc", variable: "temp")
    bc_num_slots = "4"
    class String; def blank?; empty?; end; end
    ARGV.each_slice(2) { |src, out| File.write(out, ERB.new(File.read(src), trim_mode: "-").result(binding)) }
  ' "$ood/template/script.sh.erb" "$tmp/script.sh" "$ood/submit.yml.erb" "$tmp/submit.yml" \
    "$ood/template/before.sh.erb" "$tmp/before.sh"
  bash -n "$tmp/script.sh"
  bash -n "$tmp/before.sh"
  grep -q -- '--var "temp"' "$tmp/script.sh"
  /usr/bin/python3 -c "import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); assert d['script']['native'] == ['--ntasks=4'], d" "$tmp/submit.yml"
  echo "ok: OnDemand templates render"
else
  echo "skipped: no ruby to render the OnDemand templates"
fi

if [ -n "${VOLSEG:-}" ] && [ -n "${DISPLAY:-}" ]; then
  /usr/bin/python3 - "$tmp/v.nc" <<'PY'
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "w") as f:
    for n, d in zip("zyx", (8, 8, 8)):
        f.createDimension(n, d)
    f.createVariable("v", "f4", ("z", "y", "x"))[:] = np.arange(512, dtype=np.float32).reshape(8, 8, 8)
PY
  SLURM_JOB_ID=77 SLURM_SUBMIT_HOST=login7 USER=alice VOLSEG_LAUNCHER="${MPIEXEC:-mpirun} -np 2" TMPDIR=$tmp \
    bash "$cluster/volseg-web.slurm" "$tmp/v.nc" > "$tmp/slurm.out" 2>&1 &
  job=$!
  for _ in $(seq 120); do grep -q '^  http://localhost' "$tmp/slurm.out" && break; sleep 0.5; done
  cat "$tmp/slurm.out"
  port=$(sed -n 's|^  http://localhost:\([0-9]*\)/.*|\1|p' "$tmp/slurm.out")
  url=$(sed -n 's|^  \(http://localhost:.*\)|\1|p' "$tmp/slurm.out")
  grep -q "ssh -N -L $port:localhost:$port -J alice@login7 alice@$(hostname)" "$tmp/slurm.out"
  code=$(curl -s -o /dev/null -w '%{http_code}' "${url/localhost/127.0.0.1}")
  [ "$code" = 302 ] || { echo "the address answered $code, not 302" >&2; exit 1; }
  pkill -TERM -P "$job" 2>/dev/null || true
  kill -TERM "$job" 2>/dev/null || true
  wait "$job" 2>/dev/null || true
  job=
  echo "ok: the Slurm script's tunnel and address"
else
  echo "skipped: the Slurm run needs VOLSEG and an X display"
fi
