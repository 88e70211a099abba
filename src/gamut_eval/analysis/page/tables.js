// Every table of the page, static or drawn by the drill-down: sortable by a click on a
// column header, and downloadable as CSV built from the cells shown.
import { h } from "./dom.js";

/** The text a cell shows, without its interval. */
function cellValue(cell) {
  if (!cell) {
    return "";
  }
  let text = "";
  for (const node of cell.childNodes) {
    if (!(node.nodeType === Node.ELEMENT_NODE && node.classList.contains("ci"))) {
      text += node.textContent;
    }
  }
  return text.trim();
}

/** [low, high] of a cell's interval, or null. */
function cellInterval(cell) {
  const ci = cell && cell.querySelector(".ci");
  const found = ci ? /^\[(.*), (.*)\]$/.exec(ci.textContent.trim()) : null;
  return found ? [found[1], found[2]] : null;
}

/** A number for sorting ("12.5%" is 12.5); NaN for text or a dash. */
function numberOf(text) {
  return Number.parseFloat(text.replace("\u2212", "-"));
}

function headerCells(table) {
  const row = table.tHead ? table.tHead.rows[0] : null;
  return row ? [...row.cells] : [];
}

/** Rows that sort together: a row of class "detail" stays under the row before it. */
function rowGroups(body) {
  const groups = [];
  for (const row of body.rows) {
    if (row.classList.contains("detail") && groups.length > 0) {
      groups[groups.length - 1].push(row);
    } else {
      groups.push([row]);
    }
  }
  return groups;
}

const textOrder = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

/** Sorts the table's rows by column `index`: text or numbers; empty cells always last. */
export function sortTable(table, index, ascending) {
  const headers = headerCells(table);
  const numeric = headers[index].classList.contains("num");
  const sign = ascending ? 1 : -1;
  for (const body of table.tBodies) {
    const keyed = rowGroups(body).map((group, position) => {
      const text = cellValue(group[0].cells[index]);
      return { group, position, key: numeric ? numberOf(text) : text };
    });
    const missing = (key) => (numeric ? Number.isNaN(key) : key === "" || key === "\u2014");
    keyed.sort((a, b) => {
      const [ma, mb] = [missing(a.key), missing(b.key)];
      if (ma || mb) {
        return ma === mb ? a.position - b.position : ma ? 1 : -1;
      }
      const order = numeric ? a.key - b.key : textOrder.compare(a.key, b.key);
      return sign * order || a.position - b.position;
    });
    body.append(...keyed.flatMap((item) => item.group));
  }
  headers.forEach((th, i) => {
    if (i === index) {
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    } else {
      th.removeAttribute("aria-sort");
    }
  });
}

/** One CSV field (RFC 4180); text a spreadsheet would run as a formula starts with '. */
function csvField(text) {
  let value = text;
  if (/^[=+@\t\r]/.test(value) || /^-(?![\d.])/.test(value)) {
    value = "'" + value;
  }
  return /[",\n\r]/.test(value) ? '"' + value.replaceAll('"', '""') + '"' : value;
}

/**
 * The table as CSV: a line of headers, then a line per row in the order shown. A column
 * whose cells show intervals gets two more columns, "<header> low" and "<header> high".
 */
export function tableCsv(table) {
  const headers = headerCells(table);
  const rows = [...table.tBodies].flatMap((body) =>
    [...body.rows].filter((row) => !row.classList.contains("detail")),
  );
  const withInterval = headers.map((_, i) => rows.some((row) => cellInterval(row.cells[i])));
  const head = [];
  headers.forEach((th, i) => {
    const name = th.textContent.trim();
    head.push(name);
    if (withInterval[i]) {
      head.push(name + " low", name + " high");
    }
  });
  const lines = [head];
  for (const row of rows) {
    const line = [];
    headers.forEach((_, i) => {
      line.push(cellValue(row.cells[i]));
      if (withInterval[i]) {
        line.push(...(cellInterval(row.cells[i]) || ["", ""]));
      }
    });
    lines.push(line);
  }
  return lines.map((line) => line.map(csvField).join(",")).join("\r\n") + "\r\n";
}

/** A file name from a table's caption (or its data-table name). */
function fileName(table) {
  const caption = table.caption ? table.caption.textContent : "";
  const summary = table.closest("details")?.querySelector("summary")?.textContent || "";
  const title = caption || summary.replace(/ \(\d+ rows\)$/, "") || table.dataset.table;
  const slug = title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  return (slug || "table").slice(0, 80) + ".csv";
}

function download(table) {
  const blob = new Blob([tableCsv(table)], { type: "text/csv;charset=utf-8" });
  const url = URL.createObjectURL(blob);
  const anchor = h("a", { href: url, download: fileName(table), hidden: "" });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Sort buttons in the headers and a CSV button above the table (once per table). */
export function enhanceTable(table) {
  if (table.dataset.enhanced) {
    return;
  }
  table.dataset.enhanced = "1";
  headerCells(table).forEach((th, index) => {
    const button = h("button", { type: "button", cls: "sort" }, ...th.childNodes);
    button.addEventListener("click", () => {
      sortTable(table, index, th.getAttribute("aria-sort") !== "ascending");
    });
    th.append(button);
  });
  const tools = h(
    "div",
    { cls: "table-tools" },
    h("button", {
      type: "button", cls: "csv", title: "Download this table as CSV",
      "aria-label": "Download " + fileName(table), onclick: () => download(table),
    }, "CSV"),
  );
  const holder = table.parentElement.classList.contains("scroll") ? table.parentElement : table;
  holder.before(tools);
}

/** Every table under `root` with a data-table name. */
export function enhanceTables(root) {
  for (const table of root.querySelectorAll("table[data-table]")) {
    enhanceTable(table);
  }
}
