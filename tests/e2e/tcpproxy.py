"""A TCP proxy on a loopback port in front of another, switchable at run time between `forward`,
`refuse` (nothing listens: connects are refused, open connections are closed) and `hang` (it still
accepts, but nothing passes in either direction, on new or open connections: what a network
partition or a frozen store looks like from the client's side)."""

import socket
import threading

from server import free_port

FORWARD, REFUSE, HANG = "forward", "refuse", "hang"


class Proxy:
    def __init__(self, upstream_port, port=None):
        self.upstream = ("127.0.0.1", upstream_port)
        self.port = port or free_port()
        self.mode = FORWARD
        self.cv = threading.Condition()
        self.conns = []
        self.listener = None
        self._listen()

    def _listen(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self.listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, listener):
        while True:
            try:
                c, _ = listener.accept()
            except OSError:
                return  # closed (refuse, or stop)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, client):
        with self.cv:
            self.cv.wait_for(lambda: self.mode != HANG)
            if self.mode == REFUSE:
                client.close()
                return
        try:
            up = socket.create_connection(self.upstream, timeout=10)
            up.settimeout(None)
        except OSError:
            client.close()
            return
        with self.cv:
            self.conns += [client, up]
        threading.Thread(target=self._pump, args=(client, up), daemon=True).start()
        threading.Thread(target=self._pump, args=(up, client), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self.cv:
                    # Held, not dropped: a hung link delivers nothing until it heals (or closes).
                    self.cv.wait_for(lambda: self.mode != HANG)
                    if self.mode == REFUSE:
                        break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def set(self, mode):
        """Switches to `mode` (FORWARD, REFUSE or HANG)."""
        with self.cv:
            old, self.mode = self.mode, mode
            self.cv.notify_all()
            if mode == REFUSE:
                self.listener.close()
                for s in self.conns:
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    s.close()
                self.conns = []
        if old == REFUSE and mode != REFUSE:
            self._listen()

    def stop(self):
        self.set(REFUSE)
