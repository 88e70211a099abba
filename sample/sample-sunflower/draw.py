"""Draw a common sunflower (Helianthus annuus) into image.png next to this file.

Flat colours, no text; deterministic (drawn at 2x and downscaled). Run:
    .venv/bin/python sample/sample-sunflower/draw.py
"""

from __future__ import annotations

import math
from pathlib import Path

from PIL import Image, ImageDraw

S = 2
W = H = 512 * S
img = Image.new("RGB", (W, H), (150, 206, 240))  # sky
d = ImageDraw.Draw(img)

# ground
d.rectangle([0, 430 * S, W, H], fill=(112, 164, 72))

# stem
d.polygon(
    [(250 * S, 230 * S), (266 * S, 230 * S), (272 * S, 512 * S), (244 * S, 512 * S)],
    fill=(62, 124, 44),
)


def leaf(base: tuple[float, float], angle: float, length: float, width: float) -> None:
    """A pointed leaf with a midrib, from base along angle (radians)."""
    bx, by = base
    ca, sa = math.cos(angle), math.sin(angle)
    pts = []
    for t in range(0, 41):
        u = t / 40
        half = width * math.sin(math.pi * u) * (1 - 0.35 * u)
        pts.append((u * length, half))
    for t in range(40, -1, -1):
        u = t / 40
        half = width * math.sin(math.pi * u) * (1 - 0.35 * u)
        pts.append((u * length, -half))
    poly = [(bx + x * ca - y * sa, by + x * sa + y * ca) for x, y in pts]
    d.polygon(poly, fill=(74, 146, 52))
    d.line(
        [(bx, by), (bx + length * 0.92 * ca, by + length * 0.92 * sa)],
        fill=(48, 104, 36),
        width=3 * S,
    )


leaf((262 * S, 380 * S), math.radians(-25), 150 * S, 52 * S)
leaf((254 * S, 330 * S), math.radians(200), 140 * S, 48 * S)
leaf((264 * S, 455 * S), math.radians(-160), 120 * S, 40 * S)

# flower head: two rings of yellow ray petals around a brown disc
CX, CY = 256 * S, 190 * S
R_DISC = 70 * S


def petal(angle: float, length: float, width: float, colour) -> None:
    ca, sa = math.cos(angle), math.sin(angle)
    pts = []
    for t in range(0, 31):
        u = t / 30
        half = width * math.sin(math.pi * u) ** 0.8
        pts.append((R_DISC * 0.8 + u * length, half))
    for t in range(30, -1, -1):
        u = t / 30
        half = width * math.sin(math.pi * u) ** 0.8
        pts.append((R_DISC * 0.8 + u * length, -half))
    d.polygon([(CX + x * ca - y * sa, CY + x * sa + y * ca) for x, y in pts], fill=colour)


for k in range(22):
    petal(2 * math.pi * (k + 0.5) / 22, 88 * S, 15 * S, (232, 164, 20))
for k in range(22):
    petal(2 * math.pi * k / 22, 80 * S, 14 * S, (252, 204, 40))

d.ellipse([CX - R_DISC, CY - R_DISC, CX + R_DISC, CY + R_DISC], fill=(92, 56, 26))
d.ellipse(
    [CX - R_DISC + 14 * S, CY - R_DISC + 14 * S, CX + R_DISC - 14 * S, CY + R_DISC - 14 * S],
    fill=(74, 44, 20),
)

# disc florets in a Fibonacci (golden-angle) spiral
golden = math.pi * (3 - math.sqrt(5))
N = 260
for i in range(N):
    r = (R_DISC - 6 * S) * math.sqrt((i + 0.5) / N)
    a = i * golden
    x, y = CX + r * math.cos(a), CY + r * math.sin(a)
    s = 2.6 * S
    d.ellipse([x - s, y - s, x + s, y + s], fill=(132, 88, 40) if i % 2 else (56, 32, 14))

out = img.resize((512, 512), Image.LANCZOS)
out.save(Path(__file__).with_name("image.png"), optimize=True)
