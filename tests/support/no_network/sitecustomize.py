"""Put this folder first on a subprocess's PYTHONPATH to cut its network: every name lookup other than the
loopback's fails at once (as with no network) and is appended to the file ``$LOOKUP_LOG`` names, so a test
can count the requests a command tried."""

import os
import socket

_real_getaddrinfo = socket.getaddrinfo


def _guarded(host, *args, **kwargs):
    if host not in (None, "localhost", "127.0.0.1", "::1"):
        with open(os.environ["LOOKUP_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{host}\n")
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _guarded
