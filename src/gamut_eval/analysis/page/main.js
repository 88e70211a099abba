// The page's two views, chosen by the URL fragment: the report (its sections' anchors) and
// the drill-down (#explore...). Every table becomes sortable and downloadable as CSV.
import { link } from "./dom.js";
import { enhanceTables } from "./tables.js";
import { startExplore } from "./explore.js";

const reportView = document.getElementById("report-view");
const app = document.getElementById("explore-app");
const exploreView = app ? app.closest("section") : null;
const dataNode = document.getElementById("gamut-data");
const tabs = document.querySelectorAll(".tabs a");

const hasData = app !== null && dataNode !== null;
let explore = null;

/** The drill-down, its data read on first use (the report view opens without it). */
function drillDown() {
  if (explore === null && hasData) {
    const data = JSON.parse(dataNode.textContent);
    explore = { models: data.models, draw: startExplore(app, data) };
  }
  return explore;
}

/** Shows the view the fragment names; a report anchor scrolls to its section. */
function route() {
  let hash = location.hash.replace(/^#/, "");
  try {
    hash = decodeURIComponent(hash);
  } catch {
    // a malformed escape: the fragment as written
  }
  const parts = hash.split("/");
  const exploring = parts[0] === "explore" && exploreView !== null;
  if (reportView) {
    reportView.hidden = exploring;
  }
  if (exploreView) {
    exploreView.hidden = !exploring;
  }
  for (const tab of tabs) {
    const current = (tab.getAttribute("href") === "#explore") === exploring;
    if (current) {
      tab.setAttribute("aria-current", "page");
    } else {
      tab.removeAttribute("aria-current");
    }
  }
  if (exploring) {
    if (hasData) {
      drillDown().draw(parts);
    }
    window.scrollTo(0, 0);
  } else {
    const target = hash && hash !== "report" ? document.getElementById(hash) : null;
    if (target) {
      target.scrollIntoView();
    } else if (hash === "report") {
      window.scrollTo(0, 0);
    }
  }
  document.documentElement.dataset.route = location.hash; // the view drawn, for tests
}

/** A model's name in the leaderboard tables opens it in the drill-down. */
function linkModels() {
  const rows = document.querySelectorAll(
    'table[data-table="leaderboard"] tbody tr, table[data-table="judge_scores"] tbody tr',
  );
  for (const row of rows) {
    const cell = row.cells[0];
    const name = cell ? cell.textContent.trim() : "";
    if (name) {
      const anchor = link(name, "#explore");
      anchor.dataset.model = name;
      cell.replaceChildren(anchor);
    }
  }
  reportView.addEventListener("click", (event) => {
    const anchor = event.target.closest("a[data-model]");
    if (anchor) {
      const m = drillDown().models.indexOf(anchor.dataset.model);
      if (m >= 0) {
        event.preventDefault();
        location.hash = "#explore/m/" + m;
      }
    }
  });
}

if (hasData && reportView) {
  linkModels();
}
if (reportView) {
  enhanceTables(reportView);
}
/** Printing shows the folded tables too; they fold again afterwards. */
function unfoldForPrint() {
  const folded = reportView ? [...reportView.querySelectorAll("details:not([open])")] : [];
  for (const details of folded) {
    details.open = true;
  }
  window.addEventListener("afterprint", () => {
    for (const details of folded) {
      details.open = false;
    }
  }, { once: true });
}

window.addEventListener("hashchange", route);
window.addEventListener("beforeprint", unfoldForPrint);
route();
