"""Draw an isometric Rubik's Cube (white top, green front-left, red front-right). Deterministic; writes image.png."""
import math
from pathlib import Path

from PIL import Image, ImageDraw

W = H = 512
OUT = Path(__file__).resolve().parent / "image.png"
WHITE, GREEN, RED = (245, 245, 245), (0, 155, 72), (200, 20, 30)

img = Image.new("RGB", (W, H), (225, 228, 232))
d = ImageDraw.Draw(img)
d.ellipse([110, 372, 402, 418], fill=(200, 202, 206))  # shadow

s = 150  # edge length in pixels
c30, s30 = math.cos(math.radians(30)), math.sin(math.radians(30))
top = (256, 68)  # top vertex of the top face
ex = (s * c30, s * s30)     # right-down direction
ey = (-s * c30, s * s30)    # left-down direction
ez = (0, s)                 # down


def P(o, a, b, u, v):
    return (o[0] + a[0] * u + b[0] * v, o[1] + a[1] * u + b[1] * v)


front = P(top, ex, ey, 1, 1)  # the near vertex of the top face
left = P(top, ey, ex, 1, 0)
right = P(top, ex, ey, 1, 0)
faces = [
    # origin, axis a, axis b, sticker colours (3x3, row-major); a solved cube
    (top, ex, ey, [WHITE] * 9),
    (left, ex, ez, [GREEN] * 9),
    (front, (-ey[0], -ey[1]), ez, [RED] * 9),
]
# the black body
outline = [top, right, P(right, ez, ez, 1, 0), P(front, ez, ez, 1, 0), P(left, ez, ez, 1, 0), left]
d.polygon(outline, fill=(15, 15, 15))
gap = 0.06
for o, a, b, colours in faces:
    for row in range(3):
        for col in range(3):
            u0, v0 = col / 3 + gap / 3, row / 3 + gap / 3
            u1, v1 = (col + 1) / 3 - gap / 3, (row + 1) / 3 - gap / 3
            quad = [P(o, a, b, u0, v0), P(o, a, b, u1, v0), P(o, a, b, u1, v1), P(o, a, b, u0, v1)]
            d.polygon(quad, fill=colours[row * 3 + col])
img.save(OUT)
