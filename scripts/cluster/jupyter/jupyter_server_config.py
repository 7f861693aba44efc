# SPDX-License-Identifier: MIT
# volseg web behind Jupyter (jupyter-server-proxy; docs/web.md, "From
# Jupyter"). Put this in ~/.jupyter/jupyter_server_config.py (or append it),
# set VOLSEG_WEB_FILE to the volume and, optionally, VOLSEG_WEB_RANKS, and
# start JupyterLab: its launcher gets a "volseg" tile.
#
# The proxy strips its prefix ({base_url}volseg/) before it passes requests
# on (absolute_url False), so volseg web serves at "/" and needs no
# --base-url. The proxy connects on loopback, where volseg web listens by
# default. A token still guards the port from other users of the node: made
# here, handed to the job in its environment, and carried by the launcher's
# first address; the page then keeps it in a cookie.
# No --allow-origin: the proxy passes the browser's Host header on, so the
# page's Origin (the Jupyter server's) matches it, and Jupyter itself refuses
# proxied WebSockets from other origins (tried with jupyter-server-proxy
# 4.6; docs/web.md, "What was tried").
import os
import secrets
import shutil

_token = os.environ.get("VOLSEG_WEB_TOKEN") or secrets.token_hex(24)
_file = os.environ.get("VOLSEG_WEB_FILE", os.path.expanduser("~/volume.nc"))
_ranks = os.environ.get("VOLSEG_WEB_RANKS", "2")

# Frames are drawn by VTK in offscreen windows, which need an X display; a
# Jupyter server on a compute node usually has none (volseg web then stops
# at once with "no X display"), so the job gets a virtual one.
_xvfb = ["xvfb-run", "-a"] if not os.environ.get("DISPLAY") and shutil.which("xvfb-run") else []

c = get_config()  # noqa: F821  (Jupyter's config loader provides it)
c.ServerProxy.servers = {
    "volseg": {
        "command": _xvfb
        + ["mpirun", "-np", _ranks, "volseg", "web", _file, "--port", "{port}"],
        "environment": {"VOLSEG_WEB_TOKEN": _token},
        "absolute_url": False,
        "timeout": 300,  # the first open of a volume builds its pyramid
        "new_browser_tab": True,
        "launcher_entry": {"enabled": True, "title": "volseg", "path_info": "volseg/?token=" + _token},
    }
}
