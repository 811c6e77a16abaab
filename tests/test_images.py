"""Image parts in the real count: OpenAI's tile rule, sizes read from the data: URI itself."""

import base64
import struct
import zlib

from ctxviz.engine.images import data_uri_size, image_tokens, tile_tokens
from ctxviz.engine.tokenizers import count_openai_chat


def png_uri(width: int, height: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = zlib.compress(b"".join(b"\x00" + b"\xff" * 3 * width for _ in range(height)))
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_openai_worked_examples():
    # OpenAI's vision pricing examples: 1024x1024 high = 765; 2048x4096 -> 768x1536 = 6 tiles = 1105.
    assert tile_tokens(1024, 1024) == 765
    assert tile_tokens(2048, 4096) == 1105
    assert tile_tokens(96, 180) == 255  # small images are one tile
    assert image_tokens(png_uri(4000, 3000), "low") == 85


def test_size_is_read_from_png_gif_jpeg_and_webp_headers():
    assert data_uri_size(png_uri(96, 180)) == (96, 180)
    gif = b"GIF89a" + struct.pack("<HH", 640, 480) + b"\x00" * 8
    assert data_uri_size("data:image/gif;base64," + base64.b64encode(gif).decode()) == (640, 480)
    jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9 + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 1080, 1920) + b"\x00" * 12
    assert data_uri_size("data:image/jpeg;base64," + base64.b64encode(jpeg).decode()) == (1920, 1080)
    webp = b"RIFF" + b"\x00" * 4 + b"WEBPVP8X" + b"\x00" * 8 + (799).to_bytes(3, "little") + (599).to_bytes(3, "little")
    assert data_uri_size("data:image/webp;base64," + base64.b64encode(webp).decode()) == (800, 600)


def test_unknown_or_broken_images_cost_the_documented_flat_figure():
    assert image_tokens("https://example.com/photo.jpg") == 765
    assert image_tokens("data:image/png;base64,!!!not base64") == 765
    assert image_tokens("data:image/png;base64,") == 765


def test_chat_count_charges_images():
    text_only = count_openai_chat([{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}]}])
    with_image = count_openai_chat([{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                                                {"type": "image_url", "image_url": {"url": png_uri(1024, 1024)}}]}])
    assert with_image - text_only == 765


def test_gpt_4o_mini_bills_images_at_its_own_rate():
    from ctxviz.engine.images import image_costs

    assert image_costs("gpt-4o-mini-2024-07-18") == (2833, 5667)
    assert image_costs("gpt-4o") == (85, 170) and image_costs("") == (85, 170)
    assert image_tokens(png_uri(1024, 1024), "high", "gpt-4o-mini") == 2833 + 4 * 5667
    assert image_tokens(png_uri(1024, 1024), "low", "gpt-4o-mini") == 2833


def test_real_count_charges_images_per_model(tmp_path):
    from ctxviz.engine.checks import PlanOptions
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.planner import plan_session
    from ctxviz.io.loaders import load_session

    path = tmp_path / "img.yaml"
    path.write_text(
        "ctxviz: 1\nmodel: gpt-4o\nmessages:\n"
        "  - role: user\n    content:\n      - {type: text, text: 'What is this?'}\n"
        f"      - {{type: image_url, image_url: {{url: '{png_uri(1024, 1024)}'}}}}\n"
    )
    s = load_session(str(path))
    store = CountStore()
    big = plan_session(s, "missy", store=store, options=PlanOptions(real_count=True, model="gpt-4o")).real.tokens
    mini = plan_session(s, "missy", store=store, options=PlanOptions(real_count=True, model="gpt-4o-mini")).real.tokens
    assert mini - big == (2833 + 4 * 5667) - 765


def test_a_bare_base64_image_part_keeps_its_size():
    from ctxviz.io.loaders import load_session

    data = png_uri(300, 200).split(",", 1)[1]
    s = load_session("inline.yaml", text=f"ctxviz: 1\nmessages:\n  - role: user\n    content:\n      - {{type: image, data: '{data}', media_type: image/png}}\n")
    part = s.messages[0].parts[0]
    assert part.url.startswith("data:image/png;base64,") and data_uri_size(part.url) == (300, 200)
