/* Results in the explorer's side panel (loaded before explorer.js, which calls
 * window.kgResultsPanel(node, parts, helpers) while it builds the panel):
 *   a paper   → its related papers (GET /papers/{id}/related) and a compare link;
 *   a dataset or metric → its leaderboards (GET /leaderboards?dataset=|metric=);
 *   a task    → its narrower tasks, each expandable in place (GET /entities/task/{key}).
 */
(function () {
  "use strict";

  const keyOf = (iri) => decodeURIComponent(iri.slice(iri.lastIndexOf("/") + 1));
  const page = "/static/explorer/results.html";

  const { getJSON } = window.kgDom;  // dom.js

  // A section whose content loads after the panel shows.
  function lazySection(el, title, id, load) {
    const box = el("div", { id }, el("p", { class: "muted" }, "Loading…"));
    load().then((children) => box.replaceChildren(...children))
      .catch((error) => box.replaceChildren(el("p", { class: "warn" }, error.message)));
    return [el("h3", {}, title), box];
  }

  function narrower(el, pick, items) {
    if (!items.length) return [el("p", { class: "muted" }, "No narrower task.")];
    return [el("ul", { class: "entities" }, items.map((t) => {
      const li = el("li", { class: "narrower-task" });
      const open = el("button", { type: "button", class: "more", title: "Show its narrower tasks" }, "+");
      open.addEventListener("click", async () => {
        open.disabled = true;
        const child = await getJSON("/entities/task/" + encodeURIComponent(t.key));
        li.append(...narrower(el, pick, child.narrower));
      });
      li.append(el("span", { class: "badge Task", onclick: () => pick(t.iri, "Task") }, t.label), " ", open);
      return li;
    }))];
  }

  window.kgResultsPanel = function (node, parts, helpers) {
    const { el, pick } = helpers;
    const key = keyOf(node.iri);
    if (node.type === "Paper") {
      parts.push(...lazySection(el, "Related papers", "panel-related", async () => {
        const body = await getJSON(`/papers/${encodeURIComponent(key)}/related?limit=8`);
        return [
          el("ul", { class: "papers" }, body.items.map((r) => el("li", { class: "paper" },
            el("div", { class: "title", onclick: () => pick("https://w3id.org/mlkg/id/paper/" + encodeURIComponent(r.paper.id), "Paper") },
              r.paper.title || r.paper.id),
            el("div", { class: "how" }, "shares " + r.shared.slice(0, 4).map((s) => s.label).join(", "))))),
          el("p", {},
            el("a", { href: `${page}?related=${encodeURIComponent(key)}` }, "All related papers ↗"), " · ",
            el("a", { href: `${page}?compare=${[key, ...body.items.slice(0, 2).map((r) => r.paper.id)].map(encodeURIComponent).join(",")}` },
              "Compare with the top two ↗")),
        ];
      }));
    } else if (node.type === "Dataset" || node.type === "Metric") {
      const field = node.type.toLowerCase();
      parts.push(...lazySection(el, "Leaderboards", "panel-leaderboards", async () => {
        const body = await getJSON("/leaderboards?" + new URLSearchParams({ [field]: node.iri, limit: "10" }));
        if (!body.items.length) return [el("p", { class: "muted" }, "No absolute results reported.")];
        return [el("ul", {}, body.items.map((b) => el("li", {},
          el("a", { href: `${page}?board=${b.href.replace("/leaderboards/", "")}` },
            `${b.dataset.label} · ${b.metric.label}`), ` (${b.results})`)))];
      }));
    } else if (node.type === "Task") {
      parts.push(...lazySection(el, "Narrower tasks", "panel-narrower", async () => {
        const task = await getJSON("/entities/task/" + encodeURIComponent(key));
        const above = task.broader.length
          ? [el("p", {}, "Broader: ", task.broader.map((b) => el("span", { class: "badge Task", onclick: () => pick(b.iri, "Task") }, b.label)))]
          : [];
        return [...above, ...narrower(el, pick, task.narrower),
          el("p", {}, el("a", { href: `${page}?task=${encodeURIComponent(key)}` }, "Task tree ↗"))];
      }));
    }
  };
})();
