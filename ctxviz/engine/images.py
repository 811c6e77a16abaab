"""What an image costs in an OpenAI chat request, from its size and detail.

OpenAI bills an image by tiles: with `detail: low` a flat 85 tokens; otherwise the image is scaled
to fit 2048 x 2048, then its shorter side to 768 px, and each 512 px tile costs 170 on top of the
base 85 (gpt-4o and gpt-4-turbo vision pricing). Text-only counting misses all of it, which is how a
screenshot-heavy context "fits" by the count and then overflows the real window.

The size comes from the data: URI's own header (PNG, GIF, JPEG, WebP); a remote image's size is not
known offline, so it is charged as 1024 x 1024 at high detail (765 tokens, the same flat figure
supyagent uses for every image).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

BASE_TOKENS = 85
TILE_TOKENS = 170
#: (base, per tile) where a model bills images differently: gpt-4o-mini charges about 33x the
#: tokens of gpt-4o for the same image, so its price per image comes out the same.
MODEL_IMAGE_COSTS = {"gpt-4o-mini": (2833, 5667)}


def image_costs(model: str = "") -> tuple[int, int]:
    """(base, per-tile) tokens for `model`; gpt-4o's when the model is not listed."""
    name = model.lower()
    return next((costs for prefix, costs in MODEL_IMAGE_COSTS.items() if name.startswith(prefix)), (BASE_TOKENS, TILE_TOKENS))


def image_tokens(url: str, detail: str = "", model: str = "") -> int:
    base, tile = image_costs(model)
    if detail == "low":
        return base
    size = data_uri_size(url)
    if size is None:
        return base + 4 * tile  # 1024 x 1024 at high detail: 765 for gpt-4o
    return tile_tokens(*size, base=base, tile=tile)


def tile_tokens(width: int, height: int, base: int = BASE_TOKENS, tile: int = TILE_TOKENS) -> int:
    if width <= 0 or height <= 0:
        return base
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return base + tile * math.ceil(w / 512) * math.ceil(h / 512)


def data_uri_size(url: str) -> tuple[int, int] | None:
    """(width, height) read from the first bytes of a base64 data: URI, or None when unknown."""
    if not url.startswith("data:") or ";base64," not in url[:100]:
        return None
    payload = url.split(",", 1)[1]
    prefix = min(len(payload), 65536)  # the header is near the start; JPEG may put EXIF first
    try:
        head = base64.b64decode(payload[: prefix - prefix % 4], validate=False)
    except (binascii.Error, ValueError):
        return None
    return image_size(head)


def image_size(head: bytes) -> tuple[int, int] | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(head)
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(head)
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    kind = head[12:16]
    if kind == b"VP8X" and len(head) >= 30:
        return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
    if kind == b"VP8 " and len(head) >= 30:
        w, h = struct.unpack("<HH", head[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if kind == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = int.from_bytes(head[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            h, w = struct.unpack(">HH", head[i + 5 : i + 9])
            return w, h
        i += 2 + length
    return None
