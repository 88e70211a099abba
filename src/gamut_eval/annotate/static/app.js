// gamut annotate: small conveniences on top of pages that work without script.
// Loaded from this origin only (the CSP forbids inline script).
"use strict";

// Text areas grow with their text (and shrink back), so a long check is read whole.
function grow(area) {
  area.style.height = "auto";
  area.style.height = area.scrollHeight + 2 + "px";
}

function typing(target) {
  const tag = target && target.tagName;
  return tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT" || (target && target.isContentEditable);
}

// Ctrl+Enter (or Cmd+Enter) submits the form being typed in (or the review form).
// Review and ruling forms: a = accept, r = revise (and edit the text), d = discard.
// The rubric queue: n = next rubric, p = previous. Letters never fire while typing.
function shortcuts(event) {
  if (event.altKey) return;
  const form = document.querySelector("#review-form, #adjudicate-form");
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    const own = event.target && event.target.form;
    const target = own || form;
    if (!target) return;
    event.preventDefault();
    target.requestSubmit();
    return;
  }
  if (event.ctrlKey || event.metaKey || typing(event.target)) return;
  const step = { n: "next", p: "prev" }[event.key.toLowerCase()];
  const link = step && document.querySelector("a[rel=" + step + "].queue-link");
  if (link) {
    event.preventDefault();
    window.location.assign(link.href);
    return;
  }
  if (!form) return;
  const decision = { a: "accept", r: "revise", d: "discard" }[event.key.toLowerCase()];
  if (!decision) return;
  const radio = form.querySelector('input[name="decision"][value="' + decision + '"]');
  if (!radio) return;
  event.preventDefault();
  radio.checked = true;
  radio.dispatchEvent(new Event("change", { bubbles: true }));
  if (decision === "revise") {
    const text = form.querySelector("textarea[name=revised_text]");
    if (text) { text.focus(); text.select(); }
  }
}

// The conflict view: "Use my version" puts the refused edit into the editor.
function useMine(button) {
  const row = document.querySelector('#checklist-form tr.check-row[data-check="' + CSS.escape(button.dataset.check) + '"]');
  if (!row) return;
  if (button.dataset.remove) {
    row.querySelector('input[type=checkbox][name$="-remove"]').checked = true;
  } else {
    row.querySelector('select[name$="-tier"]').value = button.dataset.tier;
    const area = row.querySelector('textarea[name$="-text"]');
    area.value = button.dataset.text;
    grow(area);
  }
  button.textContent = "Used: save to keep it";
  button.disabled = true;
}

// Item forms: rows of list elements, steps, aspects and insights can be added, removed
// and moved; their fields are renumbered (el-0-text, el-1-text...) so the server reads
// them in the order shown. The compiled checks beside the form follow each edit.
function renumber(fieldset) {
  const prefix = fieldset.dataset.prefix;
  fieldset.querySelectorAll(".row").forEach(function (row, index) {
    row.querySelectorAll("[name]").forEach(function (field) {
      field.name = field.name.replace(new RegExp("^" + prefix + "-\\d+-"), prefix + "-" + index + "-");
    });
  });
}

function tool(label, title, action) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "row-tool";
  button.textContent = label;
  button.title = title;
  button.setAttribute("aria-label", title);
  button.addEventListener("click", action);
  return button;
}

function rowTools(fieldset, row) {
  const tools = row.querySelector(".row-tools");
  if (!tools || tools.childElementCount) return;
  const changed = function () { renumber(fieldset); preview(fieldset.form); };
  tools.append(
    tool("\u2191", "move up", function () {
      if (row.previousElementSibling && row.previousElementSibling.classList.contains("row")) {
        row.parentNode.insertBefore(row, row.previousElementSibling);
        changed();
      }
    }),
    tool("\u2193", "move down", function () {
      const next = row.nextElementSibling;
      if (next && next.classList.contains("row")) {
        row.parentNode.insertBefore(next, row);
        changed();
      }
    }),
    tool("\u00d7", "remove", function () {
      if (fieldset.querySelectorAll(".row").length > 1) { row.remove(); } else {
        row.querySelectorAll("textarea, input[type=text]").forEach(function (f) { f.value = ""; });
      }
      changed();
    })
  );
}

function setUpRows(fieldset) {
  fieldset.querySelectorAll(".row").forEach(function (row) { rowTools(fieldset, row); });
  const add = tool("+ add", "add a row", function () {
    const rows = fieldset.querySelectorAll(".row");
    const copy = rows[rows.length - 1].cloneNode(true);
    copy.querySelectorAll("textarea, input[type=text]").forEach(function (f) { f.value = ""; });
    copy.querySelectorAll("input[type=checkbox]").forEach(function (f) { f.checked = false; });
    copy.querySelector(".row-tools").replaceChildren();
    fieldset.insertBefore(copy, add);
    rowTools(fieldset, copy);
    renumber(fieldset);
    const first = copy.querySelector("textarea, input");
    if (first) first.focus();
  });
  add.classList.add("add-row");
  fieldset.append(add);
}

const pending = new WeakMap();

function preview(form) {
  if (!form || !form.dataset.preview) return;
  clearTimeout(pending.get(form));
  pending.set(form, setTimeout(function () {
    fetch(form.dataset.preview, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (reply) { return reply.text(); })
      .then(function (html) {
        const box = form.parentNode.querySelector(".item-preview");
        if (box) box.innerHTML = html;
      })
      .catch(function () { /* the saved form still works without the preview */ });
  }, 250));
}

// The labelling page: 1-4 give the check in focus (else the first without a verdict) the
// n-th verdict, then focus moves to the next check; n and p work from a radio button too;
// never while typing in the note.
// Ctrl+Enter saves from anywhere on the page.
function labelKeys(event) {
  const form = document.getElementById("label-form");
  if (!form || event.altKey) return;
  const target = event.target;
  const radio = target && target.tagName === "INPUT" && target.type === "radio";
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    if (target && target.form) return; // the handler above submits the form typed in
    event.preventDefault();
    form.requestSubmit();
    return;
  }
  if (event.ctrlKey || event.metaKey || (typing(target) && !radio)) return;
  const step = radio && { n: "next", p: "prev" }[event.key.toLowerCase()];
  const link = step && document.querySelector("a[rel=" + step + "].queue-link");
  if (link) { // the handler above leaves letters alone in a field, radio buttons included
    event.preventDefault();
    window.location.assign(link.href);
    return;
  }
  const index = ["1", "2", "3", "4"].indexOf(event.key);
  if (index < 0) return;
  const checks = Array.from(form.querySelectorAll("fieldset.label-check"));
  let check = target && target.closest ? target.closest("fieldset.label-check") : null;
  if (!check) check = checks.find(function (c) { return !c.querySelector("input:checked"); });
  if (!check) return;
  event.preventDefault();
  const choices = check.querySelectorAll("input[type=radio]");
  if (!choices[index]) return;
  choices[index].checked = true;
  const next = checks[checks.indexOf(check) + 1];
  const field = next ? next.querySelector("input:checked") || next.querySelector("input[type=radio]") : null;
  (field || choices[index]).focus();
}

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form.item-form fieldset.rows").forEach(setUpRows);
  document.querySelectorAll("form.item-form").forEach(function (form) {
    form.addEventListener("input", function () { preview(form); });
    form.addEventListener("change", function () { preview(form); });
  });
  document.querySelectorAll("textarea").forEach(grow);
  document.addEventListener("input", function (event) {
    if (event.target.tagName === "TEXTAREA") grow(event.target);
  });
  document.addEventListener("keydown", shortcuts);
  document.addEventListener("keydown", labelKeys);
  document.querySelectorAll("button.use-mine").forEach(function (button) {
    button.addEventListener("click", function () { useMine(button); });
  });
});
