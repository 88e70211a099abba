"""Draw a top-down bowl of bibimbap (flat colours, no text) into image.png next to this file.

Deterministic: fixed random seed, drawn at 2x and downscaled. Run:
    .venv/bin/python sample/sample-bibimbap/draw.py
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from PIL import Image, ImageDraw

S = 2  # supersampling factor
W = H = 512 * S
CX, CY = W // 2, H // 2
rng = random.Random(20240601)

img = Image.new("RGB", (W, H), (176, 124, 80))  # wooden table
d = ImageDraw.Draw(img)

# table planks
for i in range(0, W, 128 * S):
    d.line([(i, 0), (i, H)], fill=(150, 102, 62), width=3 * S)

# bowl: shadow, dark stone rim, inner
d.ellipse(
    [CX - 236 * S + 10 * S, CY - 236 * S + 14 * S, CX + 236 * S + 10 * S, CY + 236 * S + 14 * S],
    fill=(120, 82, 50),
)
d.ellipse([CX - 236 * S, CY - 236 * S, CX + 236 * S, CY + 236 * S], fill=(58, 58, 62))
d.ellipse([CX - 214 * S, CY - 214 * S, CX + 214 * S, CY + 214 * S], fill=(40, 40, 44))
R = 200 * S
d.ellipse([CX - R, CY - R, CX + R, CY + R], fill=(246, 244, 236))  # rice

# rice grains texture
for _ in range(500):
    a = rng.uniform(0, 2 * math.pi)
    r = math.sqrt(rng.uniform(0, 1)) * (R - 8 * S)
    x, y = CX + r * math.cos(a), CY + r * math.sin(a)
    ang = rng.uniform(0, math.pi)
    dx, dy = 5 * S * math.cos(ang), 5 * S * math.sin(ang)
    d.line([(x - dx, y - dy), (x + dx, y + dy)], fill=(226, 222, 210), width=3 * S)


def sector_points(
    a0: float, a1: float, r0: float, r1: float, n: int = 40
) -> list[tuple[float, float]]:
    pts = [
        (CX + r1 * math.cos(a0 + (a1 - a0) * t / n), CY + r1 * math.sin(a0 + (a1 - a0) * t / n))
        for t in range(n + 1)
    ]
    pts += [
        (CX + r0 * math.cos(a1 - (a1 - a0) * t / n), CY + r0 * math.sin(a1 - (a1 - a0) * t / n))
        for t in range(n + 1)
    ]
    return pts


def scatter_strips(
    a0: float, a1: float, r0: float, r1: float, colour, count: int, length: float, width: int
) -> None:
    for _ in range(count):
        a = rng.uniform(a0 + 0.06, a1 - 0.06)
        r = rng.uniform(r0 + length / 2, r1 - length / 2)
        x, y = CX + r * math.cos(a), CY + r * math.sin(a)
        ang = a + rng.uniform(-0.5, 0.5)  # roughly radial
        dx, dy = length / 2 * math.cos(ang), length / 2 * math.sin(ang)
        d.line([(x - dx, y - dy), (x + dx, y + dy)], fill=colour, width=width)


# vegetable sections arranged around the centre, leaving a ring of rice visible at the edge
sections = [
    ("spinach", (46, 110, 46), (30, 84, 32)),
    ("carrot", (238, 128, 40), (214, 100, 24)),
    ("bean sprouts", (250, 238, 180), (226, 206, 120)),
    ("shiitake", (120, 78, 48), (92, 58, 36)),
    ("zucchini", (150, 196, 84), (112, 160, 60)),
    ("beef", (104, 52, 40), (78, 36, 28)),
    ("radish", (250, 250, 250), (222, 210, 220)),
    ("fern", (118, 96, 44), (92, 74, 30)),
]
n = len(sections)
r_in, r_out = 58 * S, 184 * S
gap = 0.05
for k, (name, base, strip) in enumerate(sections):
    a0 = -math.pi / 2 + 2 * math.pi * k / n + gap
    a1 = -math.pi / 2 + 2 * math.pi * (k + 1) / n - gap
    d.polygon(sector_points(a0, a1, r_in, r_out), fill=base)
    if name == "shiitake":
        for _ in range(7):
            a = rng.uniform(a0 + 0.12, a1 - 0.12)
            r = rng.uniform(r_in + 26 * S, r_out - 26 * S)
            x, y = CX + r * math.cos(a), CY + r * math.sin(a)
            d.ellipse([x - 16 * S, y - 11 * S, x + 16 * S, y + 11 * S], fill=strip)
            d.ellipse([x - 6 * S, y - 4 * S, x + 6 * S, y + 4 * S], fill=(170, 130, 96))
    elif name == "bean sprouts":
        scatter_strips(a0, a1, r_in, r_out, strip, 26, 34 * S, 4 * S)
        for _ in range(14):
            a = rng.uniform(a0 + 0.08, a1 - 0.08)
            r = rng.uniform(r_in + 10 * S, r_out - 10 * S)
            x, y = CX + r * math.cos(a), CY + r * math.sin(a)
            d.ellipse([x - 5 * S, y - 4 * S, x + 5 * S, y + 4 * S], fill=(246, 214, 70))
    elif name == "spinach":
        for _ in range(12):
            a = rng.uniform(a0 + 0.1, a1 - 0.1)
            r = rng.uniform(r_in + 18 * S, r_out - 18 * S)
            x, y = CX + r * math.cos(a), CY + r * math.sin(a)
            d.ellipse([x - 14 * S, y - 8 * S, x + 14 * S, y + 8 * S], fill=strip)
    else:
        scatter_strips(a0, a1, r_in, r_out, strip, 30, 30 * S, 5 * S)

# fried egg in the middle: irregular white, yolk off-centre
egg = []
for t in range(48):
    a = 2 * math.pi * t / 48
    r = (78 + 10 * math.sin(3 * a) + 6 * math.cos(5 * a + 1)) * S
    egg.append((CX + r * math.cos(a), CY + r * math.sin(a)))
d.polygon(egg, fill=(255, 255, 252))
d.ellipse([CX - 32 * S, CY - 30 * S, CX + 30 * S, CY + 32 * S], fill=(250, 176, 24))
d.ellipse([CX - 18 * S, CY - 18 * S, CX - 4 * S, CY - 6 * S], fill=(255, 214, 110))  # highlight

# dab of gochujang beside the egg
gx, gy = CX + 70 * S, CY - 62 * S
dab = []
for t in range(40):
    a = 2 * math.pi * t / 40
    r = (24 + 5 * math.sin(4 * a + 0.7) + 3 * math.cos(7 * a)) * S
    dab.append((gx + 1.25 * r * math.cos(a), gy + 0.85 * r * math.sin(a)))
d.polygon(dab, fill=(184, 28, 26))
d.arc(
    [gx - 16 * S, gy - 10 * S, gx + 14 * S, gy + 10 * S], 200, 340, fill=(214, 64, 48), width=3 * S
)

# sesame seeds
for _ in range(40):
    a = rng.uniform(0, 2 * math.pi)
    r = rng.uniform(20 * S, 170 * S)
    x, y = CX + r * math.cos(a), CY + r * math.sin(a)
    d.ellipse([x - 3 * S, y - 2 * S, x + 3 * S, y + 2 * S], fill=(250, 240, 200))

out = img.resize((512, 512), Image.LANCZOS)
out.save(Path(__file__).with_name("image.png"), optimize=True)
