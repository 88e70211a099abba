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

let drawExplore = null;
let models = [];
if (app && dataNode) {
  const data = JSON.parse(dataNode.textContent);
  models = data.models;
  drawExplore = startExplore(app, data);
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
    if (drawExplore) {
      drawExplore(parts);
    }
    window.scrollTo(0, 0);
    return;
  }
  const target = hash && hash !== "report" ? document.getElementById(hash) : null;
  if (target) {
    target.scrollIntoView();
  } else if (hash === "report") {
    window.scrollTo(0, 0);
  }
}

/** A model's name in the leaderboard tables opens it in the drill-down. */
function linkModels() {
  const rows = document.querySelectorAll(
    'table[data-table="leaderboard"] tbody tr, table[data-table="judge_scores"] tbody tr',
  );
  for (const row of rows) {
    const cell = row.cells[0];
    const name = cell ? cell.textContent.trim() : "";
    const m = models.indexOf(name);
    if (m >= 0) {
      cell.replaceChildren(link(name, "#explore/m/" + m));
    }
  }
}

if (drawExplore) {
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
