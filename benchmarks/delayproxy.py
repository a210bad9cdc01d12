#!/usr/bin/env python3
"""A TCP proxy that delays every chunk by half a round trip each way: a cluster one region away.

    delayproxy.py UPSTREAM_HOST:PORT --rtt-ms 50 [--listen 127.0.0.1:0]

It prints ``listening HOST:PORT`` once it accepts connections and runs until killed. Bytes pass
through untouched (TLS included: the client's handshake costs its round trips as on a real
link), in order, each chunk written ``rtt/2`` after it was read, so that the link keeps its
bandwidth and only gains latency. One asyncio loop in its own process, apart from the harness
and the tool under test. The idea is tests/integration/faultproxy.py's (a loopback proxy in
front of the real API server), at the TCP level instead of HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it arrived, in order."""
    queue: asyncio.Queue = asyncio.Queue()

    async def read():
        try:
            while True:
                data = await reader.read(65536)
                queue.put_nowait((time.monotonic() + delay, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            queue.put_nowait((time.monotonic() + delay, b""))

    async def write():
        try:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return

    await asyncio.gather(read(), write())


async def _serve(upstream: tuple[str, int], listen: tuple[str, int], delay: float) -> None:
    async def handle(client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(_pump(client_reader, up_writer, delay), _pump(up_reader, client_writer, delay))
        finally:
            for w in (client_writer, up_writer):
                w.close()

    server = await asyncio.start_server(handle, *listen, backlog=512)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"listening {host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("upstream", help="HOST:PORT of the API server")
    ap.add_argument("--rtt-ms", type=float, required=True, help="round trip to add (half each way)")
    ap.add_argument("--listen", default="127.0.0.1:0")
    args = ap.parse_args(argv)
    try:
        asyncio.run(_serve(_address(args.upstream), _address(args.listen), args.rtt_ms / 2000.0))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
