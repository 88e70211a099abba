"""Draw a Monstera deliciosa leaf (split, fenestrated, on its stalk). Deterministic; writes image.png."""
import math
from pathlib import Path

from PIL import Image, ImageDraw

W = H = 512
OUT = Path(__file__).resolve().parent / "image.png"
BG = (238, 232, 218)
LEAF = (30, 125, 60)
LEAF_DARK = (22, 98, 46)
VEIN = (120, 185, 110)
STALK = (60, 140, 70)

CUSP = (256, 384)  # where the stalk joins the heart-shaped base
A = 150            # cardioid size


def margin(phi: float) -> tuple[float, float]:
    """Leaf margin: a cardioid (heart shape) with its notch at CUSP, tip pointing up; phi from the tip."""
    c = math.cos(phi)
    r = A * (1 + c) * (1 + 0.12 * max(c, 0) ** 12)  # a slightly drawn-out tip
    return (CUSP[0] + 0.92 * r * math.sin(phi), CUSP[1] - 1.02 * r * c)


outline = [margin(2 * math.pi * i / 720 - math.pi) for i in range(721)]
mask = Image.new("L", (W, H), 0)
md = ImageDraw.Draw(mask)
md.polygon(outline, fill=255)


def inside(x: float, y: float) -> bool:
    return 0 <= x < W and 0 <= y < H and mask.getpixel((int(x), int(y))) > 0


def ray_to_margin(x: float, y: float, dx: float, dy: float) -> tuple[float, float]:
    while inside(x + dx, y + dy):
        x, y = x + dx, y + dy
    return x, y


def rotated_ellipse(cx: float, cy: float, rx: float, ry: float, ang: float, n: int = 40) -> list[tuple[float, float]]:
    ca, sa = math.cos(ang), math.sin(ang)
    pts = []
    for i in range(n):
        t = 2 * math.pi * i / n
        ex, ey = rx * math.cos(t), ry * math.sin(t)
        pts.append((cx + ex * ca - ey * sa, cy + ex * sa + ey * ca))
    return pts


tip_y = margin(0.0)[1]
veins = []  # (start, end) of each lateral vein
# slits (deep splits from the margin) and holes (fenestrations), mirrored on both sides
for side in (-1, 1):
    for i in range(6):
        t = (i + 0.8) / 7.2                      # position along the midrib, base to tip
        y0 = CUSP[1] - t * (CUSP[1] - tip_y) * 0.92
        ang = math.radians(18 + 42 * t)          # lateral veins rise more steeply near the tip
        dx, dy = side * math.cos(ang), -math.sin(ang)
        ex, ey = ray_to_margin(CUSP[0], y0, dx, dy)
        length = math.hypot(ex - CUSP[0], ey - y0)
        px, py = -dy, dx                          # perpendicular
        # the split: a narrow wedge from the margin inwards to ~45% of the way to the midrib
        ix, iy = CUSP[0] + dx * length * 0.45, y0 + dy * length * 0.45
        wo = 7 + 3 * (1 - t)
        ox, oy = ex + dx * 6, ey + dy * 6
        md.polygon([(ix, iy), (ox + px * wo, oy + py * wo), (ox - px * wo, oy - py * wo)], fill=0)
        md.ellipse([ix - 2.5, iy - 2.5, ix + 2.5, iy + 2.5], fill=0)
        # an oval hole between the midrib and the end of the split (not on the top-most vein)
        if i < 5:
            hx, hy = CUSP[0] + dx * length * 0.25, y0 + dy * length * 0.25
            md.polygon(rotated_ellipse(hx + px * 10 * side, hy + py * 10 * side, 14 - 6 * t, 5.5 - 2 * t,
                                       math.atan2(dy, dx)), fill=0)
        # lateral vein runs between this split and the next one up
        va = ang + math.radians(7)
        vdx, vdy = side * math.cos(va), -math.sin(va)
        vy0 = y0 - 16
        veins.append(((CUSP[0], vy0), ray_to_margin(CUSP[0], vy0, vdx, vdy)))

    # the heart-shaped basal lobes are split too, their veins running outwards and downwards
    for ang_deg, wo in ((-12, 9), (-42, 8)):
        ang = math.radians(ang_deg)
        dx, dy = side * math.cos(ang), -math.sin(ang)
        y0 = CUSP[1] - 22
        ex, ey = ray_to_margin(CUSP[0] + side * 8, y0, dx, dy)
        length = math.hypot(ex - CUSP[0], ey - y0)
        px, py = -dy, dx
        ix, iy = CUSP[0] + dx * length * 0.5, y0 + dy * length * 0.5
        ox, oy = ex + dx * 6, ey + dy * 6
        md.polygon([(ix, iy), (ox + px * wo, oy + py * wo), (ox - px * wo, oy - py * wo)], fill=0)
        md.ellipse([ix - 2.5, iy - 2.5, ix + 2.5, iy + 2.5], fill=0)

img = Image.new("RGB", (W, H), BG)
d = ImageDraw.Draw(img)
# stalk (petiole): a gentle curve from the leaf base down out of the frame
stalk = [(CUSP[0] + 18 * math.sin(t / 30 * math.pi / 2) ** 2, CUSP[1] - 40 + t * 6.2) for t in range(31)]
d.line(stalk, fill=STALK, width=13, joint="curve")
leaf = Image.new("RGB", (W, H), LEAF)
ld = ImageDraw.Draw(leaf)
# a darker half gives the glossy leaf some depth
ld.polygon([(CUSP[0], 0), (W, 0), (W, H), (CUSP[0], H)], fill=LEAF_DARK)
for (sx, sy), (ex, ey) in veins:
    ld.line([(sx, sy), (ex, ey)], fill=VEIN, width=2)
ld.line([(CUSP[0], CUSP[1] - 4), (CUSP[0], tip_y + 12)], fill=VEIN, width=5)  # midrib
img.paste(leaf, (0, 0), mask)
img.save(OUT)
