// The drill-down: the leaderboard of every model, a model's questions, a question's
// checks and one check's verdicts, drawn one view at a time from the URL fragment
// (#explore, #explore/m/M, #explore/m/M/q/Q, #explore/m/M/q/Q/c/C).
import { h, link, thousands } from "./dom.js";
import { enhanceTable } from "./tables.js";

/** Verdict letter (as the data holds it): its name and the symbol its chip shows. */
export const VERDICTS = {
  M: ["meets", "\u2713"],
  P: ["partially meets", "\u25d0"],
  O: ["missing", "\u2205"],
  C: ["contradicts", "\u2717"],
  U: ["unscored", "?"],
  ".": ["not judged", "\u00b7"],
};
const TIERS = { answer_critical: "answer-critical", valuable: "valuable", context: "context" };
const SCORED = "MPOC";
const PAGE = 100;

/** A verdict chip: its symbol, its name as the accessible label and tooltip. */
export function verdictChip(letter, tip) {
  const [name, symbol] = VERDICTS[letter] || [letter, letter];
  const kind = letter === "." ? "none" : letter;
  return h("span", { cls: "v v-" + kind, title: tip || name, "aria-label": name, text: symbol });
}

/** The chips with their names, as the tables show them. */
export function verdictLegend() {
  const legend = h("p", { cls: "legend meta" });
  for (const letter of Object.keys(VERDICTS)) {
    legend.append(h("span", null, verdictChip(letter), " " + VERDICTS[letter][0]));
  }
  return legend;
}

function formatScore(value) {
  return value === null ? "\u2014" : value.toFixed(1);
}

const modelHash = (m) => "#explore/m/" + m;
const questionHash = (m, q) => modelHash(m) + "/q/" + q;

function choices(any, values, names) {
  return [["", any], ...values.map((v) => [v, names ? names[v] || v : v])];
}

/** A table in its own horizontal scroller, sortable, its CSV button above. */
function scroller(name, head, body, caption) {
  const element = h("table", { "data-table": name },
    caption ? h("caption", { text: caption }) : null, h("thead", null, head), body);
  const holder = h("div", null, h("div", { cls: "scroll" }, element));
  enhanceTable(element);
  return holder;
}

/** The passages an explanation quotes (text in double quotes). */
function quotes(text) {
  const pattern = /["\u201c\u201e\u00ab]([^"\u201c\u201d\u201e\u00ab\u00bb]{3,300})["\u201d\u00bb]/g;
  return [...(text || "").matchAll(pattern)].map((found) => found[1].trim());
}

/** A paragraph of `text` with every occurrence of the phrases marked. */
function marked(text, phrases) {
  const paragraph = h("p");
  const lower = text.toLowerCase();
  const ranges = [];
  for (const phrase of phrases) {
    const needle = phrase.toLowerCase();
    let at = needle ? lower.indexOf(needle) : -1;
    while (at >= 0) {
      ranges.push([at, at + needle.length]);
      at = lower.indexOf(needle, at + needle.length);
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  let done = 0;
  for (const [from, to] of ranges) {
    const start = Math.max(from, done);
    if (to <= start) {
      continue;
    }
    paragraph.append(text.slice(done, start), h("mark", { text: text.slice(start, to) }));
    done = to;
  }
  paragraph.append(text.slice(done));
  return paragraph;
}

/** The drill-down over the page's data; returns the function that draws a route. */
export function startExplore(app, data) {
  const settings = data.settings;
  const judges = data.judges;
  const models = data.models;
  const questions = data.questions;
  const [nS, nJ, nM] = [settings.length, judges.length, models.length];
  const filters = {
    search: "", domain: "", popularity: "", tier: "", verdict: "",
    sort: "id", checkSort: "order", shown: PAGE,
  };

  // -- reading the data (layout: docs/report.md, "The embedded data") --
  function score(q, s, j, m) {
    if (!q.scores.length) {
      return null;
    }
    const value = q.scores[(s * nJ + j) * nM + m];
    return value === null ? null : value / 10;
  }
  const verdictIndex = (q, s, j, m, c) => ((s * nJ + j) * nM + m) * q.checks.length + c;
  const verdict = (q, s, j, m, c) => q.verdicts.charAt(verdictIndex(q, s, j, m, c));
  function explanation(q, s, j, m, c) {
    if (!q.explanations) {
      return null;
    }
    const i = q.explanations[verdictIndex(q, s, j, m, c)];
    return i < 0 ? "" : q.texts[i];
  }
  function answer(q, s, m) {
    if (!q.answers) {
      return null;
    }
    const i = q.answers[s * nM + m];
    return i < 0 ? null : q.texts[i];
  }

  // -- disagreement --
  /** The largest spread between the judges' scores of one setting. */
  function judgeSpread(q, m) {
    let best = null;
    for (let s = 0; s < nS; s++) {
      const values = [];
      for (let j = 0; j < nJ; j++) {
        const v = score(q, s, j, m);
        if (v !== null) {
          values.push(v);
        }
      }
      if (values.length && nJ > 1) {
        best = Math.max(best === null ? 0 : best, Math.max(...values) - Math.min(...values));
      }
    }
    return best;
  }
  function settingGap(q, m) {
    if (nS < 2) {
      return null;
    }
    const [a, b] = [score(q, 0, 0, m), score(q, 1, 0, m)];
    return a === null || b === null ? null : Math.abs(b - a);
  }
  /** Per setting, how many distinct scored verdicts beyond one the judges gave. */
  function checkJudgeDisagreement(q, m, c) {
    let n = 0;
    for (let s = 0; s < nS; s++) {
      const seen = new Set();
      for (let j = 0; j < nJ; j++) {
        const v = verdict(q, s, j, m, c);
        if (SCORED.includes(v)) {
          seen.add(v);
        }
      }
      n += Math.max(seen.size - 1, 0);
    }
    return n;
  }
  /** How many judges gave the two settings different scored verdicts. */
  function checkSettingDisagreement(q, m, c) {
    if (nS < 2) {
      return 0;
    }
    let n = 0;
    for (let j = 0; j < nJ; j++) {
      const [a, b] = [verdict(q, 0, j, m, c), verdict(q, 1, j, m, c)];
      if (SCORED.includes(a) && SCORED.includes(b) && a !== b) {
        n++;
      }
    }
    return n;
  }
  function hasVerdict(q, m, c, wanted) {
    for (let s = 0; s < nS; s++) {
      for (let j = 0; j < nJ; j++) {
        if (verdict(q, s, j, m, c) === wanted) {
          return true;
        }
      }
    }
    return false;
  }

  // -- links and controls --

  function select(label, key, options, render) {
    const control = h("select", { "aria-label": label });
    control.addEventListener("change", () => {
      filters[key] = control.value;
      filters.shown = PAGE;
      render();
    });
    for (const [value, text] of options) {
      const option = h("option", { value, text });
      option.selected = filters[key] === value;
      control.append(option);
    }
    return h("label", null, label + " ", control);
  }
  function distinct(key) {
    return [...new Set(questions.map((q) => q[key]).filter(Boolean))].toSorted();
  }
  const tierFilter = (render) =>
    select("tier", "tier", choices("any tier", Object.keys(TIERS), TIERS), render);
  function verdictFilter(render) {
    const names = Object.fromEntries(Object.entries(VERDICTS).map(([k, v]) => [k, v[0]]));
    return select("verdict", "verdict", choices("any verdict", [...SCORED, "U"], names), render);
  }
  function crumbs(m, qi) {
    const nav = h("nav", { cls: "crumbs", "aria-label": "drill-down path" },
      link("Leaderboard", "#explore"));
    if (m !== null) {
      nav.append("\u203a ", link(models[m], modelHash(m)));
    }
    if (qi !== null) {
      nav.append(" \u203a ", h("span", { text: questions[qi].id }));
    }
    return nav;
  }
  // -- the views --
  function board() {
    const scores = new Map();
    for (const row of data.leaderboard) {
      if (!scores.has(row.model)) {
        scores.set(row.model, new Map());
      }
      scores.get(row.model).set(row.setting + "\u0000" + row.judge, row.gamut);
    }
    const columns = settings.flatMap((s) => judges.map((j) => [s, j]));
    const head = h("tr", null, h("th", { text: "model" }),
      ...columns.map(([s, j]) => h("th", { cls: "num", text: s + ", " + j })));
    const body = h("tbody");
    for (const [model, byColumn] of scores) {
      const m = models.indexOf(model);
      const row = h("tr", null, h("td", null, m < 0 ? model : link(model, modelHash(m))));
      for (const [s, j] of columns) {
        const value = byColumn.get(s + "\u0000" + j);
        row.append(h("td", { cls: "num", text: value == null ? "\u2014" : (100 * value).toFixed(1) }));
      }
      body.append(row);
    }
    return [
      h("p", { cls: "intro", text: "Gamut score x100 of every model. Open a model to see its " +
        "questions, a question to see its checks, a check to see every verdict and the " +
        "judges' explanations." }),
      scroller("explore-leaderboard", head, body),
    ];
  }

  const haystacks = new Map();
  function haystack(q, m) {
    if (!haystacks.has(q.id)) {
      const parts = [q.id, q.entity, q.question, q.question_text_only,
        ...q.checks.map((c) => c.text)];
      haystacks.set(q.id, parts.join("\n").toLowerCase());
    }
    const own = [];
    for (let s = 0; s < nS; s++) {
      const text = answer(q, s, m);
      if (text) {
        own.push(text);
      }
    }
    return haystacks.get(q.id) + "\n" + own.join("\n").toLowerCase();
  }
  function matches(q, m) {
    const term = filters.search.toLowerCase();
    if (term && !haystack(q, m).includes(term)) {
      return false;
    }
    if ((filters.domain && q.domain !== filters.domain) ||
        (filters.popularity && q.popularity !== filters.popularity)) {
      return false;
    }
    if (!filters.tier && !filters.verdict) {
      return true;
    }
    return q.checks.some((check, c) => (!filters.tier || check.tier === filters.tier) &&
      (!filters.verdict || hasVerdict(q, m, c, filters.verdict)));
  }
  function sortKey(q, m) {
    if (filters.sort === "judges") {
      return -(judgeSpread(q, m) || 0);
    }
    if (filters.sort === "settings") {
      return -(settingGap(q, m) || 0);
    }
    if (filters.sort === "low") {
      const v = score(q, 0, 0, m);
      return v === null ? 1e9 : v;
    }
    return 0;
  }

  function modelView(m) {
    const list = h("div");
    function render() {
      list.textContent = "";
      const shown = [];
      questions.forEach((q, i) => {
        if (matches(q, m)) {
          shown.push(i);
        }
      });
      if (filters.sort !== "id") {
        const keys = new Map(shown.map((i) => [i, sortKey(questions[i], m)]));
        shown.sort((a, b) => keys.get(a) - keys.get(b) || a - b);
      }
      list.append(h("p", { cls: "meta", text: `${shown.length} of ${questions.length} questions` }));
      const head = h("tr", null, h("th", { text: "question" }), h("th", { text: "domain" }),
        h("th", { text: "popularity" }), h("th", { text: "text" }),
        ...settings.map((s) => h("th", { cls: "num", text: `${s} (${judges[0]})` })),
        h("th", { cls: "num", text: "judge spread" }), h("th", { cls: "num", text: "setting gap" }));
      const body = h("tbody");
      for (const i of shown.slice(0, filters.shown)) {
        const q = questions[i];
        const row = h("tr", null, h("td", null, link(q.id, questionHash(m, i))),
          h("td", { text: q.domain || "" }), h("td", { text: q.popularity || "" }),
          h("td", { cls: "qtext", text: q.question || "" }));
        for (let s = 0; s < nS; s++) {
          row.append(h("td", { cls: "num", text: formatScore(score(q, s, 0, m)) }));
        }
        row.append(h("td", { cls: "num", text: formatScore(judgeSpread(q, m)) }),
          h("td", { cls: "num", text: formatScore(settingGap(q, m)) }));
        body.append(row);
      }
      list.append(scroller("explore-questions", head, body));
      if (shown.length > filters.shown) {
        list.append(h("button", {
          type: "button", cls: "more", text: `Show more (${shown.length - filters.shown} left)`,
          onclick: () => { filters.shown += 200; render(); },
        }));
      }
    }
    const search = h("input", { type: "search", placeholder: "search questions, checks, answers",
      "aria-label": "search", value: filters.search });
    search.addEventListener("input", () => {
      filters.search = search.value;
      filters.shown = PAGE;
      render();
    });
    const controls = h("div", { cls: "filters" }, search,
      select("domain", "domain", choices("any domain", distinct("domain")), render),
      select("popularity", "popularity", choices("any popularity", distinct("popularity")), render),
      tierFilter(render), verdictFilter(render),
      select("sort", "sort", [["id", "question id"], ["low", "lowest score first"],
        ["judges", "judge disagreement"], ["settings", "setting disagreement"]], render));
    render();
    return [crumbs(m, null), h("h3", { text: models[m] }), controls, list];
  }

  function noTexts() {
    return h("p", { cls: "note", text: "The answers and explanations of this question are not " +
      `in this page: the report embeds at most ${thousands(data.text_budget)} characters of ` +
      `texts (${data.questions_with_texts} of ${questions.length} questions fit). They are in ` +
      "the run folder's verdicts.jsonl and responses.jsonl." });
  }

  function questionView(m, qi, open) {
    const q = questions[qi];
    const out = [crumbs(m, qi), h("h3", { text: q.id + (q.entity ? " \u2014 " + q.entity : "") })];
    const picker = h("select", { "aria-label": "model" });
    picker.addEventListener("change", () => {
      location.hash = questionHash(picker.value, qi) + (open === null ? "" : "/c/" + open);
    });
    models.forEach((name, i) => {
      const option = h("option", { value: String(i), text: name });
      option.selected = i === m;
      picker.append(option);
    });
    const variants = h("div", { cls: "variants" });
    if (q.image) {
      variants.append(h("img", { src: q.image, alt: "image of question " + q.id, width: "160" }));
    }
    variants.append(h("div", null,
      h("p", null, h("strong", { text: "With the image: " }), q.question || ""),
      h("p", null, h("strong", { text: "Text only: " }), q.question_text_only || ""),
      h("p", { cls: "meta", text: [q.domain, q.popularity].filter(Boolean).join(", ") })));
    out.push(variants);
    if (q.rubric.length) {
      const items = h("ul");
      for (const item of q.rubric) {
        const li = h("li", null, h("span", { cls: "tier", text: TIERS[item.tier] || item.tier }),
          " " + item.statement);
        if (item.elements.length) {
          li.append(h("span", { cls: "meta", text: ": " + item.elements.join("; ") }));
        }
        items.append(li);
      }
      out.push(h("details", { cls: "rubric" },
        h("summary", { text: `Meta-rubric (${q.rubric.length} items)` }), items));
    }
    out.push(h("div", { cls: "filters" }, h("label", null, "answers and verdicts of ", picker)));
    const phrases = [];
    if (open !== null) {
      for (let s = 0; s < nS; s++) {
        for (let j = 0; j < nJ; j++) {
          phrases.push(...quotes(explanation(q, s, j, m, open)));
        }
      }
    }
    if (q.answers) {
      const answers = h("div", { cls: "answers" });
      settings.forEach((setting, s) => {
        const text = answer(q, s, m);
        answers.append(h("div", { cls: "answer", "data-setting": setting },
          h("strong", { text: setting }),
          text === null ? h("p", { cls: "note", text: "no answer in the run folder" })
            : marked(text, phrases)));
      });
      out.push(answers);
    } else {
      out.push(noTexts());
    }

    const checks = h("div");
    function render() {
      checks.textContent = "";
      const shown = [];
      q.checks.forEach((check, c) => {
        if ((!filters.tier || check.tier === filters.tier) &&
            (!filters.verdict || hasVerdict(q, m, c, filters.verdict))) {
          shown.push(c);
        }
      });
      if (filters.checkSort !== "order") {
        const count = filters.checkSort === "judges" ? checkJudgeDisagreement
          : checkSettingDisagreement;
        shown.sort((a, b) => count(q, m, b) - count(q, m, a) || a - b);
      }
      const head = h("tr", null, h("th", { text: "check" }), h("th", { text: "tier" }),
        ...settings.map((s) => h("th", { text: s + ": " + judges.join(" | ") })),
        h("th", { cls: "num", text: "judges disagree" }),
        h("th", { cls: "num", text: "settings disagree" }));
      const body = h("tbody");
      for (const c of shown) {
        const check = q.checks[c];
        const isOpen = c === open;
        const row = h("tr", { cls: isOpen ? "open" : "", "data-check": check.id },
          h("td", null, h("button", {
            type: "button", cls: "check", "aria-expanded": String(isOpen),
            text: check.id + ": " + check.text,
            onclick: () => { location.hash = questionHash(m, qi) + (isOpen ? "" : "/c/" + c); },
          })),
          h("td", null, h("span", { cls: "tier", text: TIERS[check.tier] || check.tier || "?" })));
        for (let s = 0; s < nS; s++) {
          const cell = h("td");
          for (let j = 0; j < nJ; j++) {
            const letter = verdict(q, s, j, m, c);
            const why = explanation(q, s, j, m, c);
            const tip = `${judges[j]}, ${settings[s]}: ${VERDICTS[letter][0]}` +
              (why ? " \u2014 " + why : "");
            cell.append(verdictChip(letter, tip));
          }
          row.append(cell);
        }
        row.append(h("td", { cls: "num", text: String(checkJudgeDisagreement(q, m, c)) }),
          h("td", { cls: "num", text: String(checkSettingDisagreement(q, m, c)) }));
        body.append(row);
        if (isOpen) {
          body.append(h("tr", { cls: "detail" },
            h("td", { colspan: String(4 + nS) }, detail(q, m, c))));
        }
      }
      checks.append(scroller("explore-checks", head, body));
    }
    out.push(h("div", { cls: "filters" }, tierFilter(render), verdictFilter(render),
      select("sort checks", "checkSort", [["order", "checklist order"],
        ["judges", "judge disagreement"], ["settings", "setting disagreement"]], render)));
    out.push(verdictLegend(), checks);
    render();
    return out;
  }

  /** Every verdict on one check: this model's first, then the others. */
  function detail(q, m, c) {
    const body = h("tbody");
    const order = [m, ...models.map((_, i) => i).filter((i) => i !== m)];
    for (const mi of order) {
      for (let s = 0; s < nS; s++) {
        for (let j = 0; j < nJ; j++) {
          const letter = verdict(q, s, j, mi, c);
          const why = explanation(q, s, j, mi, c);
          body.append(h("tr", { cls: mi === m ? "self" : "" },
            h("td", { text: models[mi] }), h("td", { text: settings[s] }),
            h("td", { text: judges[j] }),
            h("td", null, verdictChip(letter), " " + VERDICTS[letter][0]),
            h("td", { cls: "expl", text: why === null ? "(not in this page)" : why })));
        }
      }
    }
    const head = h("tr", null, ...["model", "setting", "judge", "verdict", "explanation"]
      .map((text) => h("th", { text })));
    return scroller("explore-verdicts", head, body,
      `Every verdict on ${q.checks[c].id}: ${q.checks[c].text}`);
  }

  /** Draws the view a fragment names (its parts after "explore"). */
  return function route(parts) {
    const number = (key, at, limit) => {
      if (parts[at] !== key) {
        return null;
      }
      const n = Number.parseInt(parts[at + 1], 10);
      return n >= 0 && n < limit ? n : null;
    };
    const m = number("m", 1, nM);
    const qi = m === null ? null : number("q", 3, questions.length);
    const c = qi === null ? null : number("c", 5, questions[qi].checks.length);
    const views = m === null ? board() : qi === null ? modelView(m) : questionView(m, qi, c);
    app.replaceChildren(...views);
    app.dataset.view = m === null ? "leaderboard" : qi === null ? "model" : "question";
  };
}
