"""Draw an Eiffel Tower silhouette against an evening sky. Deterministic; writes image.png."""
from pathlib import Path

from PIL import Image, ImageDraw

W = H = 512
OUT = Path(__file__).resolve().parent / "image.png"
CX = 256
IRON = (52, 44, 50)
LATTICE = (92, 80, 84)


def sky(y: int) -> tuple[int, int, int]:
    t = y / H
    top, bottom = (70, 110, 170), (250, 190, 130)
    return tuple(int(a + (b - a) * t) for a, b in zip(top, bottom))


img = Image.new("RGB", (W, H))
d = ImageDraw.Draw(img)
for y in range(H):
    d.line([(0, y), (W, y)], fill=sky(y))
d.rectangle([0, 486, W, H], fill=(60, 80, 55))  # ground


def lerp(a: float, b: float, t: float) -> float:
    return a + (b - a) * t


def edge(y0: float, y1: float, w0: float, w1: float, power: float, n: int = 24) -> list[tuple[float, float]]:
    """Right-hand outer edge from (w0 at y0) up to (w1 at y1), concave when power > 1."""
    pts = []
    for i in range(n + 1):
        t = i / n
        w = w1 + (w0 - w1) * (1 - t) ** power
        pts.append((CX + w, lerp(y0, y1, t)))
    return pts


# right half outline, bottom to top, then mirrored
right = []
right += edge(486, 372, 150, 92, 1.6)          # legs up to the first platform
right += [(CX + 104, 372), (CX + 104, 356), (CX + 80, 356)]  # first platform
right += edge(356, 252, 80, 40, 1.5)
right += [(CX + 50, 252), (CX + 50, 242), (CX + 36, 242)]    # second platform
right += edge(242, 92, 36, 8, 2.4)
right += [(CX + 12, 92), (CX + 12, 84), (CX + 7, 84), (CX + 7, 64), (CX + 3, 64), (CX + 1.5, 28)]
left = [(2 * CX - x, y) for x, y in reversed(right)]
d.polygon(right + left, fill=IRON)

# lattice: criss-cross bracing drawn in a lighter iron tone, clipped to the silhouette
mask = Image.new("L", (W, H), 0)
ImageDraw.Draw(mask).polygon(right + left, fill=255)
lat = Image.new("RGB", (W, H), IRON)
ld = ImageDraw.Draw(lat)
for k in range(-40, 60):
    x = k * 12
    ld.line([(x, 0), (x + 520, 520)], fill=LATTICE, width=1)
    ld.line([(x + 520, 0), (x, 520)], fill=LATTICE, width=1)
img.paste(lat, (0, 0), mask)
d = ImageDraw.Draw(img)
# solid edges of the legs and the platforms
d.line(right, fill=IRON, width=5)
d.line(left[::-1], fill=IRON, width=5)
d.rectangle([CX - 104, 356, CX + 104, 372], fill=IRON)
d.rectangle([CX - 50, 242, CX + 50, 252], fill=IRON)
d.rectangle([CX - 12, 84, CX + 12, 92], fill=IRON)

# the great arch between the legs (sky seen through it)
arch = []
for i in range(41):
    t = i / 40
    x = lerp(-98, 98, t)
    y = 486 - 84 * (1 - (x / 98) ** 2) ** 0.5
    arch.append((CX + x, y))
# re-fill the arch opening with the sky gradient
arch_mask = Image.new("L", (W, H), 0)
ImageDraw.Draw(arch_mask).polygon(arch + [(CX + 98, 487), (CX - 98, 487)], fill=255)
sky_img = Image.new("RGB", (W, H))
sd = ImageDraw.Draw(sky_img)
for y in range(H):
    sd.line([(0, y), (W, y)], fill=sky(y))
img.paste(sky_img, (0, 0), arch_mask)
d = ImageDraw.Draw(img)
d.line(arch, fill=IRON, width=6)
# opening between the first and second platforms
upper = [(CX - 44, 356), (CX - 8, 290), (CX + 8, 290), (CX + 44, 356)]
up_mask = Image.new("L", (W, H), 0)
ImageDraw.Draw(up_mask).polygon(upper, fill=255)
img.paste(sky_img, (0, 0), up_mask)
d = ImageDraw.Draw(img)
d.line(upper, fill=IRON, width=4)
d.rectangle([0, 486, W, H], fill=(60, 80, 55))
img.save(OUT)
