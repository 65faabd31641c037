// memcli ui: a little progressive enhancement; every page works without it.
"use strict";
document.addEventListener("keydown", (event) => {
  // "/" focuses the search box, as on many sites.
  if (event.key === "/" && !["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) {
    event.preventDefault();
    const box = document.getElementById("q") || document.querySelector("header input[name=q]");
    if (box) { box.focus(); box.select(); }
  }
});
// On a node page, pointing at a neighbour's row lights its node in the drawing, and back.
document.querySelectorAll("table.neighbours tbody tr").forEach((row) => {
  const link = row.querySelector("a.nid");
  if (!link) return;
  const dot = document.querySelector(`svg.graph a[data-node="${link.textContent}"]`);
  if (!dot) return;
  const on = () => { dot.classList.add("hl"); row.classList.add("hl"); };
  const off = () => { dot.classList.remove("hl"); row.classList.remove("hl"); };
  row.addEventListener("mouseenter", on); row.addEventListener("mouseleave", off);
  dot.addEventListener("mouseenter", on); dot.addEventListener("mouseleave", off);
});
