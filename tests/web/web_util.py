# SPDX-License-Identifier: MIT
"""Starting and stopping a `volseg web` job for the tests, as a user does:
mpirun, the one address line on stdout, SIGTERM at the end."""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import e2e_util  # noqa: E402

VOLSEG = e2e_util.VOLSEG
RANKS = int(os.environ.get("VOLSEG_WEB_RANKS", "2"))
URL_LINE = re.compile(r"^volseg web: (http://([^/:]+):(\d+)(/[^?]*)(?:\?token=([0-9A-Za-z_-]+))?)$")


class Job:
    """`volseg web ARGS` on `ranks` ranks; the address it printed."""

    def __init__(self, args, ranks=RANKS, cwd=None, env=None, wait=True):
        self.proc = subprocess.Popen(e2e_util.command(["web"] + [str(a) for a in args], ranks=ranks),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                                     env=dict(os.environ, **(env or {})), start_new_session=True)
        self.url = self.host = self.base = self.token = None
        self.port = 0
        if wait:
            self.wait_for_address()

    def wait_for_address(self, timeout=120):
        deadline = time.time() + timeout
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = URL_LINE.match(line.strip())
            if m:
                self.url, self.host, self.port, self.base, self.token = (m.group(1), m.group(2), int(m.group(3)),
                                                                         m.group(4), m.group(5))
                return
        self.stop()
        raise AssertionError(f"volseg web printed no address: {line!r}; stderr: {self.proc.stderr.read()}")

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM to the whole job, as a scheduler ending it does; returns
        its exit status and stderr."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            _, err = self.proc.communicate()
        return self.proc.returncode, err

    def finish(self, timeout=120):
        """A job that ends by itself (a refusal): its status, stdout, stderr."""
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def get(self, path, headers=None):
        """status, headers, body of GET http://host:port/path (no redirects)."""

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        request = urllib.request.Request(f"http://{self.host}:{self.port}{path}", headers=headers or {})
        try:
            with opener.open(request, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()
