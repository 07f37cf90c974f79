"""Headless Chromium driven over the DevTools protocol (--remote-debugging-pipe), stdlib only.

One browser loads allocsim's HTML reports, one page after another: it records every
network request, JavaScript exception and console or log error, reads the DOM through
Runtime.evaluate and takes PNG screenshots. Used by tools/check_report_pages (the ctest)
and tools/screenshot_report (the picture in docs/outputs.md and docs/report.md).
"""
import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

# Without these, a headless Chromium in a closed network hangs on refused connections.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--mute-audio",
]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """A Chromium over a pipe; `with Browser() as b: page = b.load(path)`."""

    def __init__(self, executable=None, timeout=60):
        self.executable = executable or find_chromium()
        if not self.executable:
            raise RuntimeError("no chromium on PATH (Debian: apt-get install chromium; tools/setup --all does)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="allocsim-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        # The protocol pipe is the child's fds 3 (commands in) and 4 (replies out); copied
        # first, so that neither end is overwritten by the other, and kept past close_fds.
        def child_fds():
            commands, replies = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(commands, 3)
            os.dup2(replies, 4)
        self.process = subprocess.Popen(
            [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4, to_child_r, from_child_w), preexec_fn=child_fds)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:  # the browser may be gone already
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self):
        while b"\0" not in self.buffer:
            import select
            ready, _, _ = select.select([self.from_child], [], [], self.timeout)
            if not ready:
                raise TimeoutError(f"chromium sent nothing for {self.timeout} s")
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the protocol pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=False, **params):
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = self.session
        os.write(self.to_child, json.dumps(command).encode() + b"\0")
        while True:
            message = self._read_message()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method):
        for i, event in enumerate(self.events):
            if event["method"] == method:
                return self.events.pop(i)
        while True:
            message = self._read_message()
            if message.get("method") == method:
                return message
            if "method" in message:
                self.events.append(message)

    def load(self, path, width=1200, height=900):
        """Opens `path` and waits for its load event; returns a Page."""
        self.events = []
        url = Path(path).resolve().as_uri()
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        return Page(self, url)


class Page:
    def __init__(self, browser, url):
        self.browser = browser
        self.url = url

    def evaluate(self, expression):
        result = self.browser.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self):
        """Every request other than the page itself, every exception and every error logged."""
        found = []
        for event in self.browser.events:
            method, params = event["method"], event.get("params", {})
            if method == "Network.requestWillBeSent" and params["request"]["url"] != self.url:
                found.append("network request: " + params["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                found.append("exception: " + json.dumps(params["exceptionDetails"])[:300])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                found.append("console " + params["type"] + ": " + json.dumps(params.get("args"))[:300])
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                found.append("log " + params["entry"]["level"] + ": " + params["entry"]["text"][:300])
        return found

    def screenshot(self, full_page=False, scale=1.0):
        """The viewport (or the whole page) as PNG bytes, scaled by `scale`."""
        width = self.evaluate("window.innerWidth")
        height = self.evaluate("document.documentElement.scrollHeight" if full_page else "window.innerHeight")
        params = {"format": "png", "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": scale},
                  "captureBeyondViewport": full_page}
        return base64.b64decode(self.browser.call("Page.captureScreenshot", session=True, **params)["data"])


def png_colours(png, limit=64):
    """The distinct colours of an 8-bit RGB(A) PNG, up to `limit`, and the share of the commonest."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, header = 8, b"", None
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        body = png[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour_type = header[:4]
    if depth != 8 or colour_type not in (2, 6):
        raise ValueError(f"PNG of bit depth {depth}, colour type {colour_type}: only 8-bit RGB(A) is read")
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    counts = {}
    for y in range(height):
        row_at = y * (stride + 1)
        kind, row = raw[row_at], bytearray(raw[row_at + 1:row_at + 1 + stride])
        for x in range(stride):  # undo the row's filter (PNG spec, 9.2)
            left = row[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                row[x] = (row[x] + left) & 255
            elif kind == 2:
                row[x] = (row[x] + up) & 255
            elif kind == 3:
                row[x] = (row[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[x] = (row[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        for x in range(0, stride, channels * 4):  # every fourth pixel is enough to tell
            colour = bytes(row[x:x + 3])
            if colour in counts or len(counts) < limit:
                counts[colour] = counts.get(colour, 0) + 1
        previous = row
    total = sum(counts.values())
    return len(counts), max(counts.values()) / total
