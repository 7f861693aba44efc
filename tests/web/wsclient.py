# SPDX-License-Identifier: MIT
"""A small WebSocket client (RFC 6455) on the standard library, for the tests
of `volseg web`: Debian's Python has no websocket module, and the tests must
see the bytes a page would (the status line of a refused upgrade, the close
code of an oversized message)."""
import base64
import json
import os
import socket
import struct


class HandshakeRefused(Exception):
    def __init__(self, status, body):
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body


class Closed(Exception):
    def __init__(self, code):
        super().__init__(f"closed with code {code}")
        self.code = code


class WebSocket:
    def __init__(self, host, port, path, headers=None, timeout=60):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            head += chunk
        status_line, _, rest = head.partition(b"\r\n")
        status = int(status_line.split()[1]) if status_line else 0
        if status != 101:
            raise HandshakeRefused(status, rest.partition(b"\r\n\r\n")[2].decode(errors="replace"))
        self.buffer = head.partition(b"\r\n\r\n")[2]

    def _read(self, n):
        # Chunks joined once: appending each to the buffer copies it whole
        # every time, seconds for a frame of megabytes.
        if len(self.buffer) < n:
            parts, have = [self.buffer], len(self.buffer)
            while have < n:
                chunk = self.sock.recv(max(65536, n - have))
                if not chunk:
                    raise Closed(1006)
                parts.append(chunk)
                have += len(chunk)
            self.buffer = b"".join(parts)
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def send(self, payload, opcode=1):
        if isinstance(payload, (dict, list)):
            payload = json.dumps(payload)
        if isinstance(payload, str):
            payload = payload.encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def receive(self):
        """The next message: a dict (text) or bytes (binary)."""
        parts, kind = [], None  # a message's fragments, joined once
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data = self._read(n)
            if opcode == 8:
                raise Closed(struct.unpack(">H", data[:2])[0] if len(data) >= 2 else 1005)
            if opcode == 9:  # ping
                continue
            if opcode in (1, 2):
                kind = opcode
            parts.append(data)
            if b0 & 0x80:
                message = b"".join(parts)
                return json.loads(message) if kind == 1 else message

    def until(self, predicate, limit=200):
        """Messages until one satisfies predicate; returns it and those before."""
        seen = []
        for _ in range(limit):
            m = self.receive()
            seen.append(m)
            if predicate(m):
                return m, seen
        raise AssertionError(f"no such message among {len(seen)}")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def binary_header(frame):
    """The JSON header and the payload of a binary frame of volseg web."""
    n = struct.unpack("<I", frame[:4])[0]
    return json.loads(frame[4:4 + n]), frame[4 + n:]
