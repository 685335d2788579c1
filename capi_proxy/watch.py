"""Watch streams: one JSON event per line, each translated and written as soon as it is complete."""
import json

from capi_proxy.errors import ProxyError, status_dict

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024


def error_event(code, message):
    return (json.dumps({"type": "ERROR", "object": status_dict(code, message)}) + "\n").encode()


async def relay_events(upstream_response, client_response, transform_line, max_event_bytes=DEFAULT_MAX_EVENT_BYTES,
                       on_event=None):
    """Copy events from upstream to the client, transformed line by line; returns the number of events.

    Memory is bounded by one event (max_event_bytes) plus one network chunk. A transform failure or an
    oversized event ends the stream with an ERROR event, so the client re-lists instead of hanging.
    """
    pending = bytearray()
    events = 0
    async for chunk in upstream_response.content.iter_any():
        pending += chunk
        start = 0
        out = []
        while True:
            newline = pending.find(b"\n", start)
            if newline < 0:
                break
            line = bytes(pending[start:newline])
            start = newline + 1
            if line.strip():
                try:
                    out.append(transform_line(line))
                except ProxyError as exc:
                    out.append(error_event(exc.code, exc.message))
                    await client_response.write(b"".join(out))
                    return events
                events += 1
        if start:
            del pending[:start]
        if out:
            await client_response.write(b"".join(out))
            if on_event is not None:
                on_event(len(out))
        if len(pending) > max_event_bytes:
            await client_response.write(error_event(
                500, "watch event larger than %d bytes; the proxy ended the watch (raise --max-event-bytes)" % max_event_bytes))
            return events
    if pending.strip():
        await client_response.write(transform_line(bytes(pending)))
        events += 1
    return events
