"""Draw a vertical traffic light (red lit) for the sample benchmark. Deterministic; writes image.png."""
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

W = H = 512
OUT = Path(__file__).resolve().parent / "image.png"

img = Image.new("RGB", (W, H), (150, 195, 230))
d = ImageDraw.Draw(img)
# sky gradient
for y in range(H):
    t = y / H
    d.line([(0, y), (W, y)], fill=(int(120 + 80 * t), int(175 + 50 * t), int(225 + 20 * t)))
# pole
d.rectangle([244, 400, 268, 512], fill=(70, 72, 78))
# housing with a back plate
d.rounded_rectangle([166, 40, 346, 420], radius=22, fill=(25, 25, 28))
d.rounded_rectangle([186, 58, 326, 402], radius=18, fill=(45, 46, 50))
lamps = [(256, 121), (256, 230), (256, 339)]
colours_on = [(255, 40, 30), (255, 176, 0), (0, 220, 90)]
colours_off = [(95, 22, 20), (100, 72, 10), (12, 80, 40)]
# glow of the lit red lamp
glow = Image.new("RGBA", (W, H), (0, 0, 0, 0))
gd = ImageDraw.Draw(glow)
gd.ellipse([256 - 78, 121 - 78, 256 + 78, 121 + 78], fill=(255, 60, 40, 150))
glow = glow.filter(ImageFilter.GaussianBlur(18))
img.paste(glow, (0, 0), glow)
d = ImageDraw.Draw(img)
for i, (cx, cy) in enumerate(lamps):
    r = 44
    # visor (hood) above each lamp
    d.pieslice([cx - r - 10, cy - r - 12, cx + r + 10, cy + r + 8], 180, 360, fill=(15, 15, 17))
    d.ellipse([cx - r - 4, cy - r - 4, cx + r + 4, cy + r + 4], fill=(10, 10, 12))
    fill = colours_on[i] if i == 0 else colours_off[i]
    d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
    if i == 0:
        d.ellipse([cx - 26, cy - 28, cx + 6, cy - 4], fill=(255, 150, 130))
    else:
        d.ellipse([cx - 24, cy - 26, cx + 2, cy - 8], fill=tuple(min(255, c + 35) for c in fill))
img.save(OUT)
