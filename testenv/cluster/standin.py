"""The stand-in process of a container whose image the test bed cannot run (an OpenShift or HyperShift image it has
no build of): it holds the container's place in its Pod, listens on the container's declared TCP ports on every
address of the Pod (so a probe of such a port shows the pod network works) and answers any HTTP request there with
200, until SIGTERM. It does nothing of what the image does; the containers the tests rely on run for real
(testenv.cluster.pods IMAGES).

    python -m testenv.cluster.standin PORT [PORT...]
"""
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *_args):
        pass


def main(argv=None):
    ports = [int(port) for port in (sys.argv[1:] if argv is None else argv)]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    for port in ports:
        server = ThreadingHTTPServer(("0.0.0.0", port), _Answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    done.wait()


if __name__ == "__main__":
    main()
