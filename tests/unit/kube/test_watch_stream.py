"""kube/watch.py: a watch's newline-delimited events, read from a stream that arrives in pieces."""

import threading

from applyset.kube import http_requests as wire
from applyset.kube import watch
from applyset.kube.discovery import Resource

WIDGETS = Resource(group="example.com", version="v1", kind="Widget", plural="widgets", namespaced=True)


class Resp:
    """urllib3's answer, not preloaded: ``read1`` gives the chunks as the server sent them."""

    def __init__(self, chunks, then=None):
        self.chunks, self.then, self.closed, self.shut = list(chunks), then, False, False

    def read1(self, _size):
        if self.chunks:
            return self.chunks.pop(0)
        if self.then is not None:
            raise self.then
        return b""

    def shutdown(self):
        self.shut = True

    def close(self):
        self.closed = True


def test_a_watch_request_resumes_from_a_version_with_bookmarks_and_a_server_timeout():
    req = wire.watch_request(WIDGETS, "shop", "42", timeout_seconds=7, field_selector="metadata.name=w")
    assert req.method == "GET" and not req.retry and not req.writes
    assert req.target == ("/apis/example.com/v1/namespaces/shop/widgets?watch=true&resourceVersion=42"
                          "&allowWatchBookmarks=true&timeoutSeconds=7&fieldSelector=metadata.name%3Dw")
    assert wire.watch_request(WIDGETS, None, "1", timeout_seconds=0).accept == wire.METADATA_WATCH


def test_events_split_across_chunks_are_read_whole_and_in_order():
    resp = Resp([b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}\n{"type":"BOO',
                 b'KMARK","object":{"metadata":{"resourceVersion":"9"}}}\n\n',
                 b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}'])
    stream = watch.WatchStream(resp)
    events = list(stream)
    assert [e.type for e in events] == ["ADDED", "BOOKMARK", "ERROR"]
    assert [e.resource_version for e in events[:2]] == ["5", "9"]
    assert events[2].expired and not events[0].expired
    assert resp.closed and stream.ended_by is None


def test_a_dropped_stream_ends_quietly_and_says_why():
    stream = watch.WatchStream(Resp([b'{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}\n'],
                                    then=ConnectionResetError("reset")))
    assert [e.type for e in stream] == ["MODIFIED"]
    assert isinstance(stream.ended_by, ConnectionResetError)


def test_closing_from_another_thread_ends_a_blocked_read():
    unblock = threading.Event()

    class Blocking(Resp):
        def read1(self, _size):
            unblock.wait(5)
            raise OSError("shut down")

        def shutdown(self):
            super().shutdown()
            unblock.set()

    resp = Blocking([])
    stream = watch.WatchStream(resp)
    reader = threading.Thread(target=lambda: list(stream))
    reader.start()
    stream.close()
    reader.join(2)
    assert not reader.is_alive() and resp.shut and resp.closed and stream.ended_by is None


def test_lines_that_are_not_events_are_skipped():
    assert watch.parse_line(b"not json") is None
    assert watch.parse_line(b'{"kind":"Status"}') is None
    assert watch.parse_line(b"   ") is None


def test_a_response_without_read1_is_read_a_byte_at_a_time():
    class Old:
        def __init__(self, data):
            self.data = data

        def read(self, amount):
            chunk, self.data = self.data[:amount], self.data[amount:]
            return chunk

        def close(self):
            pass

    stream = watch.WatchStream(Old(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'))
    assert [e.object["metadata"]["name"] for e in stream] == ["a"]
