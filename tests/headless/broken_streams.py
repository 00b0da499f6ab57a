"""Replies no Messages API client can read: event streams broken in the ways a
proxy, a crash or a bug breaks them, and bodies that are no stream at all."""

from __future__ import annotations

_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],'
    b'"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
)
BROKEN = {
    # An event whose data is not JSON: the SDK raises JSONDecodeError.
    "not-json": ("text/event-stream", b"event: message_start\ndata: {not json\n\n"),
    # A delta before any message_start: the SDK's accumulator asserts.
    "out-of-order": (
        "text/event-stream",
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"x"}}\n\n',
    ),
    # A stream that ends right after it started.
    "cut-short": ("text/event-stream", _START),
    # A delta for a content block that was never opened.
    "no-block": (
        "text/event-stream",
        _START + b'event: content_block_delta\ndata: {"type":"content_block_delta","index":3,'
        b'"delta":{"type":"text_delta","text":"x"}}\n\n',
    ),
    "empty": ("text/event-stream", b""),
    "html": ("text/html", b"<html><body>502 Bad Gateway</body></html>"),
}
