"""Watch streams: one JSON event per line, each translated and written as soon as it is complete."""
import json

from capi_proxy.errors import ProxyError, status_dict

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024


def error_event(code, message, reason=None):
    return (json.dumps({"type": "ERROR", "object": status_dict(code, message, reason)}) + "\n").encode()


def complete_lines(pending, transform_line):
    """(bytes to send, bytes of pending consumed, events, failed) for the complete lines at the start of pending.

    A transform failure ends the output with an ERROR event (failed is then True). Everything this builds
    dies with the call, so an idle watch keeps no line, chunk or translation while it waits for the next read.
    """
    out = []
    start = 0
    events = 0
    while True:
        newline = pending.find(b"\n", start)
        if newline < 0:
            return b"".join(out), start, events, False
        line = bytes(pending[start:newline])
        start = newline + 1
        if line.strip():
            try:
                out.append(transform_line(line))
            except ProxyError as exc:
                out.append(error_event(exc.code, exc.message))
                return b"".join(out), start, events, True
            events += 1


async def relay_events(upstream_response, client_response, transform_line, max_event_bytes=DEFAULT_MAX_EVENT_BYTES,
                       on_event=None):
    """Copy events from upstream to the client, transformed line by line; returns the number of events.

    Memory is bounded by one event (max_event_bytes) plus one network chunk, and between events a watch holds
    only the unfinished tail of the stream (usually nothing). A transform failure or an oversized event ends
    the stream with an ERROR event, so the client re-lists instead of hanging.
    """
    pending = bytearray()
    events = 0
    async for chunk in upstream_response.content.iter_any():
        pending += chunk
        del chunk  # not held while the next read is awaited
        output, consumed, count, failed = complete_lines(pending, transform_line)
        events += count
        if consumed == len(pending):
            pending = bytearray()  # del pending[:consumed] would keep the burst's whole allocation
        elif consumed:
            del pending[:consumed]
        if output:
            await client_response.write(output)
            del output
            if on_event is not None and count:
                on_event(count)
        if failed:
            return events
        if len(pending) > max_event_bytes:
            await client_response.write(error_event(
                500, "watch event larger than %d bytes; the proxy ended the watch (raise --max-event-bytes)" % max_event_bytes))
            return events
    if pending.strip():
        await client_response.write(transform_line(bytes(pending)))
        events += 1
    return events
