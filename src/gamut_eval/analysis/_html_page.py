"""The HTML page around a report's sections: template, stylesheet, Content-Security-Policy.

The page is one self-contained file: no fonts, no external URLs. A strict CSP (meta tag)
forbids everything but the page's own stylesheet and its one drill-down script, each
admitted by its SHA-256 hash, so even text that slipped past escaping could not load or
run anything. Jinja's autoescaping escapes every value; only the stylesheet, the script,
the SVG plots (built by ``_svg``, which escapes its own text) and the embedded JSON (with
every ``<``, ``>`` and ``&`` written as a ``\\u`` escape, so it cannot end its block) are
marked safe.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

import jinja2
from markupsafe import Markup

from gamut_eval.analysis._explore_js import EXPLORE_CSS, EXPLORE_JS

__all__ = ["CSP", "CSS", "Block", "Header", "Section", "embed_json", "render_page"]

CSS = (
    """
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0}
body{color:#1d2330;background:#fff}
header,main,footer{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:18px}
h1{font-size:24px;margin:8px 0}
h2{font-size:20px;margin:34px 0 8px;border-bottom:2px solid #d9dde6;padding-bottom:4px}
h3{font-size:16px;margin:22px 0 6px}
.meta{color:#4a5263}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 18px}
nav a{color:#1f5fa8}
.notes li,.note{color:#7a4b00}
.intro{color:#4a5263;max-width:860px}
figure{margin:10px 0}
.plots{display:flex;flex-wrap:wrap;gap:12px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13px}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{padding:3px 8px;border-bottom:1px solid #e4e7ee;text-align:left;vertical-align:top}
th{background:#f3f5f9;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.ci{color:#6b7385;font-size:11px}
details{margin:8px 0}
summary{cursor:pointer;color:#1f5fa8}
footer{color:#4a5263;font-size:12px;margin-top:40px;padding-bottom:30px}
svg.plot{max-width:100%;height:auto;font-family:system-ui,sans-serif}
svg .bg{fill:#fff}
svg .ptitle{font-size:13px;font-weight:600;fill:#1d2330}
svg .label{font-size:12px;fill:#1d2330}
svg .plabel{font-size:10px;fill:#3b4252}
svg .tick{font-size:11px;fill:#4a5263}
svg .caption{font-size:11px;fill:#4a5263}
svg .axis{stroke:#4a5263;stroke-width:1}
svg .grid{stroke:#e4e7ee;stroke-width:1}
svg .zero{stroke:#9aa3b5;stroke-width:1;stroke-dasharray:3 3}
svg .diagonal{stroke:#9aa3b5;stroke-width:1;stroke-dasharray:4 4}
svg .whisker{stroke:#0072b2;stroke-width:1.5}
svg .dot{fill:#0072b2;stroke:#fff;stroke-width:1}
svg .bar{fill:#56b4e9}
svg .leader{stroke:#9aa3b5;stroke-width:0.75}
svg .cell{font-size:11px;fill:#1d2330}
svg .cell.dark{fill:#fff}
""".strip()
    + "\n"
    + EXPLORE_CSS
)


def _style_hash(css: str) -> str:
    digest = hashlib.sha256(css.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


CSP = (
    f"default-src 'none'; style-src {_style_hash(CSS)}; script-src {_style_hash(EXPLORE_JS)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""Nothing may load or run except the page's own stylesheet and script (by hash)."""


def embed_json(text: str) -> Markup:
    """JSON text made safe inside ``<script type="application/json">``: no ``<``, ``>``
    or ``&`` is left to end the block or open a comment (``JSON.parse`` reads the escapes
    back)."""
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


@dataclass(frozen=True)
class Header:
    text: str
    numeric: bool


@dataclass(frozen=True)
class Block:
    """One piece of a section: a heading, plots, a table or a note."""

    kind: str
    """``h3``, ``plots``, ``table`` or ``note``."""
    text: str = ""
    plots: list[Markup] = field(default_factory=list)
    name: str = ""
    """For tables: the report table it shows (``data-table``)."""
    headers: list[Header] = field(default_factory=list)
    rows: list[list[tuple[str, str]]] = field(default_factory=list)
    collapsed: bool = False


@dataclass(frozen=True)
class Section:
    anchor: str
    title: str
    intro: str
    blocks: list[Block]


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{ title }}</title>
<style>{{ css }}</style>
</head><body>
<header>
<h1>{{ title }}</h1>
<p class="meta">{{ summary }}</p>
<nav><ul>{% if data %}<li><a href="#explore">Explore</a></li>{% endif %}{% for s in sections %}
<li><a href="#{{ s.anchor }}">{{ s.title }}</a></li>{% endfor %}
</ul></nav>
{% if notes %}<ul class="notes">{% for n in notes %}<li>{{ n }}</li>{% endfor %}</ul>
{% endif %}
</header>
<main>
{% if data %}<section id="explore"><h2>Explore</h2>
<div id="explore-app"><p class="note">The drill-down needs JavaScript.</p></div>
</section>
<script type="application/json" id="gamut-data">{{ data }}</script>
{% endif %}
{% macro table(b) -%}
{% if b.collapsed %}<details><summary>{{ b.text }} ({{ b.rows|length }} rows)</summary>{% endif %}
<div class="scroll"><table data-table="{{ b.name }}">
{% if not b.collapsed %}<caption>{{ b.text }}</caption>{% endif %}
<thead><tr>{% for h in b.headers %}
<th{% if h.numeric %} class="num"{% endif %}>{{ h.text }}</th>{% endfor %}
</tr></thead>
<tbody>
{% for row in b.rows %}<tr>{% for value, ci in row %}
<td{% if b.headers[loop.index0].numeric %} class="num"{% endif %}>{{ value }}
{%- if ci %} <span class="ci">{{ ci }}</span>{% endif %}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>
{% if b.collapsed %}</details>{% endif %}
{%- endmacro %}
{% for s in sections %}
<section id="{{ s.anchor }}"><h2>{{ s.title }}</h2>
{% if s.intro %}<p class="intro">{{ s.intro }}</p>{% endif %}
{% for b in s.blocks %}
{% if b.kind == "h3" %}<h3>{{ b.text }}</h3>
{% elif b.kind == "plots" %}<div class="plots">{% for svg in b.plots %}
<figure>{{ svg }}</figure>{% endfor %}</div>
{% elif b.kind == "note" %}<p class="note">{{ b.text }}</p>
{% elif b.kind == "table" %}{{ table(b) }}
{% endif %}
{% endfor %}
</section>
{% endfor %}
</main>
<footer><p>{{ footer }}</p></footer>
{% if data %}<script>{{ js }}</script>{% endif %}
</body></html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def render_page(
    title: str,
    summary: str,
    notes: list[str],
    sections: list[Section],
    footer: str,
    data: str | None = None,
) -> str:
    """The whole page; every string argument is escaped. ``data``: the drill-down's JSON
    text, embedded once with the script that renders it (no drill-down without it)."""
    return _ENV.from_string(_TEMPLATE).render(
        data=embed_json(data) if data else None,
        js=Markup(EXPLORE_JS),
        csp=Markup(CSP),
        css=Markup(CSS),
        title=title,
        summary=summary,
        notes=notes,
        sections=sections,
        footer=footer,
    )
