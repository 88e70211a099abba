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

// Review and ruling forms: a = accept, r = revise (and edit the text), d = discard,
// Ctrl+Enter (or Cmd+Enter) submits, also from inside the text.
function shortcuts(event) {
  const form = document.querySelector("#review-form, #adjudicate-form");
  if (!form || event.altKey) return;
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    form.requestSubmit();
    return;
  }
  if (event.ctrlKey || event.metaKey || typing(event.target)) return;
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

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("textarea").forEach(grow);
  document.addEventListener("input", function (event) {
    if (event.target.tagName === "TEXTAREA") grow(event.target);
  });
  document.addEventListener("keydown", shortcuts);
  document.querySelectorAll("button.use-mine").forEach(function (button) {
    button.addEventListener("click", function () { useMine(button); });
  });
});
