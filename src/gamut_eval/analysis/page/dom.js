// Building DOM nodes. Text from the run is always set with textContent, never parsed as markup.

/**
 * A new element. attrs: "text" sets textContent, "cls" the class, "on<event>" adds a
 * listener, anything else is an attribute. Children: nodes or strings (text nodes);
 * null and undefined are skipped.
 */
export function h(tag, attrs, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") {
      element.textContent = value;
    } else if (key === "cls") {
      element.className = value;
    } else if (key.startsWith("on")) {
      element.addEventListener(key.slice(2), value);
    } else {
      element.setAttribute(key, value);
    }
  }
  for (const child of children) {
    if (child === null || child === undefined) {
      continue;
    }
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

/** A link to a fragment of this page. */
export function link(text, hash) {
  return h("a", { href: hash, text });
}

/** 1234567 as "1,234,567". */
export function thousands(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
