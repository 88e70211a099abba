"""Draw the Leaning Tower of Pisa (tilted white arcaded cylinder with a belfry) into image.png.

Flat colours, no text; deterministic (drawn at 2x and downscaled). The tower is drawn
upright on its own layer, then rotated about its base and pasted onto the scene. Run:
    .venv/bin/python sample/sample-leaning-tower/draw.py
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

S = 2
W = H = 512 * S
scene = Image.new("RGB", (W, H), (156, 206, 238))  # sky
sd = ImageDraw.Draw(scene)
sd.rectangle([0, 440 * S, W, H], fill=(108, 170, 80))  # lawn of the Piazza
sd.rectangle([0, 436 * S, W, 446 * S], fill=(214, 206, 186))  # paved edge

# --- the tower, upright, on a transparent layer -------------------------------------
TW, TH = 240 * S, 420 * S
tower = Image.new("RGBA", (TW, TH), (0, 0, 0, 0))
t = ImageDraw.Draw(tower)
MARBLE = (246, 242, 230)
SHADE = (214, 206, 188)
DARK = (120, 112, 100)
CXT = TW // 2
body_w = 140 * S  # width of the cylinder in side view
x0, x1 = CXT - body_w // 2, CXT + body_w // 2
base_y = TH - 4 * S  # bottom of the tower on this layer

# ground storey (taller, blind arcade), 6 upper arcaded storeys, then the belfry
storeys = [(58 * S, 5, False)] + [(40 * S, 7, True)] * 6
y = base_y
for h, arches, gallery in storeys:
    top = y - h
    t.rectangle([x0, top, x1, y], fill=MARBLE)
    # shading on the right side of the cylinder
    t.rectangle([x1 - 22 * S, top, x1, y], fill=SHADE)
    # cornice band between storeys
    t.rectangle([x0 - 5 * S, top - 4 * S, x1 + 5 * S, top + 3 * S], fill=SHADE)
    # arches: columns with round tops, dark openings on gallery storeys
    span = body_w / arches
    for k in range(arches):
        ax0 = x0 + k * span + 4 * S
        ax1 = x0 + (k + 1) * span - 4 * S
        aw = ax1 - ax0
        fill = DARK if gallery else SHADE
        t.rectangle([ax0, top + aw / 2 + 6 * S, ax1, y - 3 * S], fill=fill)
        t.pieslice([ax0, top + 6 * S, ax1, top + 6 * S + aw], 180, 360, fill=fill)
        # column between arches
        if k:
            cx = x0 + k * span
            t.rectangle([cx - 2 * S, top + 6 * S, cx + 2 * S, y - 3 * S], fill=MARBLE)
    y = top - 4 * S

# belfry: smaller cylinder on top with arched openings and a low roof
bw = 96 * S
bx0, bx1 = CXT - bw // 2, CXT + bw // 2
btop = y - 42 * S
t.rectangle([bx0, btop, bx1, y], fill=MARBLE)
t.rectangle([bx1 - 16 * S, btop, bx1, y], fill=SHADE)
for k in range(4):
    ax0 = bx0 + k * bw / 4 + 6 * S
    ax1 = bx0 + (k + 1) * bw / 4 - 6 * S
    aw = ax1 - ax0
    t.rectangle([ax0, btop + aw / 2 + 8 * S, ax1, y - 4 * S], fill=DARK)
    t.pieslice([ax0, btop + 8 * S, ax1, btop + 8 * S + aw], 180, 360, fill=DARK)
t.rectangle([bx0 - 4 * S, btop - 6 * S, bx1 + 4 * S, btop + 2 * S], fill=SHADE)

# --- lean it: rotate about the base centre and paste ---------------------------------
LEAN = -5.5  # degrees, negative = clockwise in PIL (tilting to the right)
tilted = tower.rotate(LEAN, resample=Image.BICUBIC, expand=True, center=(CXT, base_y))
# after expand the base centre moves; locate the lowest opaque row's centre and anchor it
bbox = tilted.getbbox()
px = W // 2 - tilted.width // 2 - 30 * S
py = 452 * S - bbox[3]  # lowest corner slightly below the paving line
scene.paste(tilted, (px, py), tilted)
# redraw the paving and lawn in front so the base sits in the ground
sd.rectangle([0, 446 * S, W, H], fill=(108, 170, 80))
sd.rectangle([0, 440 * S, W, 446 * S], fill=(214, 206, 186))
sd.ellipse([W // 2 - 150 * S, 446 * S, W // 2 + 120 * S, 462 * S], fill=(92, 148, 68))

out = scene.resize((512, 512), Image.LANCZOS)
out.save(Path(__file__).with_name("image.png"), optimize=True)
