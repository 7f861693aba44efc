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
# The browser's Origin is the Jupyter server's, which need not be the Host
# the proxy passes on: --allow-origin '*' lets the page's WebSocket through.
# That opens nothing: Jupyter checks the Origin of proxied WebSockets itself,
# the token is still needed, and the token's cookie is SameSite=Strict, so a
# page of another site never carries it.
import os
import secrets

_token = os.environ.get("VOLSEG_WEB_TOKEN") or secrets.token_hex(24)
_file = os.environ.get("VOLSEG_WEB_FILE", os.path.expanduser("~/volume.nc"))
_ranks = os.environ.get("VOLSEG_WEB_RANKS", "2")

c = get_config()  # noqa: F821  (Jupyter's config loader provides it)
c.ServerProxy.servers = {
    "volseg": {
        "command": ["mpirun", "-np", _ranks, "volseg", "web", _file, "--port", "{port}", "--allow-origin", "*"],
        "environment": {"VOLSEG_WEB_TOKEN": _token},
        "absolute_url": False,
        "timeout": 300,  # the first open of a volume builds its pyramid
        "new_browser_tab": True,
        "launcher_entry": {"enabled": True, "title": "volseg", "path_info": "volseg/?token=" + _token},
    }
}
