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


def _whole_stream(output_tokens: bytes) -> bytes:
    """A complete, well-formed stream whose final usage says `output_tokens`."""
    return (
        _START
        + b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"{\\"verdict\\": \\"PASS\\"}"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
        b'"end_turn","stop_sequence":null},"usage":{"output_tokens":' + output_tokens + b"}}\n\n"
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


# Usage no real reply gives: a negative count would make a negative cost,
# which turns a budget off.
BROKEN.update(
    {
        "negative-usage": ("text/event-stream", _whole_stream(b"-10000000")),
        "fractional-usage": ("text/event-stream", _whole_stream(b"1.5")),
        "huge-usage": ("text/event-stream", _whole_stream(b"10000000000000000000")),
        # Usage no count can be read from would count as 0 and under-count the cost.
        "nan-usage": ("text/event-stream", _whole_stream(b"NaN")),
        "infinite-usage": ("text/event-stream", _whole_stream(b"Infinity")),
        "null-usage": ("text/event-stream", _whole_stream(b"null")),
        "text-usage": ("text/event-stream", _whole_stream(b'"lots"')),
    }
)
