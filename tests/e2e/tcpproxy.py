"""A TCP proxy on a loopback port in front of another (the S3 backend in the outage tests),
switchable at run time between `forward`, `refuse` and `hang` (see [`Proxy`])."""

import select
import socket
import threading

from server import free_port

FORWARD, REFUSE, HANG = "forward", "refuse", "hang"


class Proxy:
    """A TCP proxy in front of the backend, switched between `forward`; `refuse` (the listening
    socket is closed, so connects are refused, and open connections are closed: a dead store); and
    `hang` (connections are still accepted but nothing is forwarded either way, on new and open
    connections alike: a partition). Bytes held during a hang are forwarded when it ends, as TCP
    delivers them once a partition heals."""

    class Conn:
        def __init__(self, client):
            self.socks = [client]  # the client's socket, then the upstream one
            self.closed = False

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.port = free_port()
        self.mode = "forward"
        self.cond = threading.Condition()
        self.conns = set()
        self.listener = None
        self.sent = bytearray()  # what clients sent upstream, when `record` is set
        self.record = False
        self._listen()

    def _listen(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(256)
        s.settimeout(0.2)  # the accept loop notices a refuse within 0.2 s
        self.listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s):
        while self.listener is s:
            try:
                c, _ = s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(None)
            conn = Proxy.Conn(c)
            with self.cond:
                if self.listener is not s:
                    c.close()
                    return
                self.conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _forwarding(self, conn):
        """Blocks while hanging; whether to go on forwarding `conn`."""
        with self.cond:
            while self.mode == "hang" and not conn.closed:
                self.cond.wait(0.2)
            return self.mode == "forward" and not conn.closed

    def _serve(self, conn):
        try:
            if not self._forwarding(conn):
                return
            up = socket.create_connection(self.upstream, timeout=5)
            up.settimeout(None)
            conn.socks.append(up)
            back = threading.Thread(target=self._pump, args=(conn, up, conn.socks[0]), daemon=True)
            back.start()
            self._pump(conn, conn.socks[0], up)
            back.join()
        except OSError:
            pass
        finally:
            self._close(conn)

    def _pump(self, conn, src, dst):
        while self._forwarding(conn):
            try:
                ready, _, _ = select.select([src], [], [], 0.2)
                if not ready or self.mode != "forward":
                    continue  # a hang began: the bytes stay unread
                data = src.recv(65536)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                if self.record and src is conn.socks[0]:
                    with self.cond:
                        self.sent.extend(data)
                dst.sendall(data)
            except (OSError, ValueError):
                return

    def _close(self, conn):
        with self.cond:
            conn.closed = True
            self.conns.discard(conn)
        for s in conn.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def set_mode(self, mode):
        assert mode in (FORWARD, REFUSE, HANG), mode
        with self.cond:
            old, self.mode = self.mode, mode
            victims, listener = [], None
            if mode == "refuse":
                victims, listener, self.listener = list(self.conns), self.listener, None
            self.cond.notify_all()
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        for conn in victims:
            self._close(conn)
        if old == "refuse" and mode != "refuse":
            self._listen()

    def close(self):
        self.set_mode("refuse")
