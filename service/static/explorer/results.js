/* Leaderboards, related papers, comparisons and the task tree (results.html).
 *
 * The view follows the URL:
 *   results.html                               leaderboards (filters: task, dataset, metric)
 *   results.html?board=DATASET_KEY/METRIC_KEY   one leaderboard, rows linked to their sentences
 *   results.html?related=PAPER_ID               related papers, with what they share
 *   results.html?compare=ID,ID,…                papers side by side
 *   results.html?task=TASK_KEY                  a task's broader and narrower tasks
 * Everything comes from the REST API (GET /leaderboards…, /papers/{id}/related,
 * /compare, /entities/task/{key}).
 */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);

  const { el, getJSON } = window.kgDom;  // dom.js, shared by the explorer's pages

  const keyOf = (iri) => decodeURIComponent(iri.slice(iri.lastIndexOf("/") + 1));
  const label = (ref) => (ref && (ref.label || keyOf(ref.iri))) || "—";
  const paperLink = (p) => el("a", { href: "/id/paper/" + encodeURIComponent(p.id) }, p.title || p.id);

  // A text fragment (#:~:text=start,end) makes the browser scroll to and mark the sentence.
  function fragment(text) {
    const words = text.split(/\s+/).filter(Boolean);
    const enc = (s) => encodeURIComponent(s).replace(/-/g, "%2D").replace(/,/g, "%2C");
    if (words.length <= 8) return "#:~:text=" + enc(words.join(" "));
    return "#:~:text=" + enc(words.slice(0, 4).join(" ")) + "," + enc(words.slice(-4).join(" "));
  }

  // The claim with the value marked: the value is a substring of the claim.
  function sentence(claim, valueText) {
    const at = valueText ? claim.text.indexOf(valueText) : -1;
    if (at < 0) return el("span", { class: "sentence" }, claim.text);
    return el("span", { class: "sentence" }, claim.text.slice(0, at),
      el("mark", {}, valueText), claim.text.slice(at + valueText.length));
  }

  function status(text) { $("status").textContent = text; }

  // ------------------------------------------------------------- views

  async function leaderboards(params) {
    const form = $("filters");
    form.hidden = false;
    for (const name of ["task", "dataset", "metric", "min_results"]) {
      if (params.get(name)) form.elements[name].value = params.get(name);
    }
    const query = new URLSearchParams({ limit: "200", min_results: form.elements.min_results.value });
    for (const name of ["task", "dataset", "metric"]) {
      if (form.elements[name].value) query.set(name, form.elements[name].value);
    }
    const body = await getJSON("/leaderboards?" + query);
    status(`${body.total} leaderboards with at least ${query.get("min_results")} absolute results`);
    const arrow = { true: "↑ higher is better", false: "↓ lower is better", null: "direction unknown" };
    return el("table", { class: "board", id: "leaderboards" },
      el("tr", {}, el("th", {}, "Dataset"), el("th", {}, "Metric"), el("th", {}, "Task"),
        el("th", {}, "Results"), el("th", {}, "")),
      body.items.map((b) => el("tr", {},
        el("td", {}, el("a", { href: "?board=" + b.href.replace("/leaderboards/", "") }, label(b.dataset))),
        el("td", {}, label(b.metric)),
        el("td", {}, b.task ? label(b.task) : ""),
        el("td", { class: "num" }, b.results),
        el("td", { class: "baseline" }, arrow[b.metric.higher_is_better]))));
  }

  async function board(path) {
    const body = await getJSON("/leaderboards/" + path);
    const better = { true: "higher is better", false: "lower is better", null: "direction unknown" };
    status(`${body.items.length} results, best first (${better[body.higher_is_better]})`);
    return el("div", {},
      el("h1", { class: "view-title" }, `${label(body.dataset)} · ${label(body.metric)}`),
      el("table", { class: "board", id: "leaderboard" },
        el("tr", {}, el("th", {}, "#"), el("th", {}, "Value"), el("th", {}, "Model or method"),
          el("th", {}, "Paper"), el("th", {}, "Sentence")),
        body.items.map((r) => el("tr", {},
          el("td", { class: "num" }, r.rank),
          el("td", { class: "num" }, r.value.text),
          el("td", {}, label(r.method), r.proposed ? null : el("div", { class: "baseline" }, "baseline")),
          el("td", {}, paperLink(r.paper)),
          el("td", {}, el("a", {
            class: "sentence-link",
            href: "/id/paper/" + encodeURIComponent(r.paper.id) + fragment(r.claim.text),
            title: `characters ${r.claim.start}–${r.claim.end} of the abstract`,
          }, sentence(r.claim, r.value.text)))))));
  }

  async function related(id) {
    const body = await getJSON(`/papers/${encodeURIComponent(id)}/related?limit=20`);
    status(`${body.items.length} related papers, by what they share (rarer counts more)`);
    return el("div", {},
      el("h1", { class: "view-title" }, "Related to: ", paperLink(body.paper)),
      el("p", {}, el("a", {
        href: "?compare=" + [id, ...body.items.slice(0, 3).map((i) => i.paper.id)].join(","),
      }, "Compare with the top three")),
      el("table", { class: "board", id: "related" },
        el("tr", {}, el("th", {}, "Score"), el("th", {}, "Paper"), el("th", {}, "Shared")),
        body.items.map((r) => el("tr", {},
          el("td", { class: "num" }, r.score.toFixed(2)),
          el("td", {}, paperLink(r.paper)),
          el("td", {}, r.shared.map((s) => el("span", { class: "chip " + s.type }, s.label || keyOf(s.iri))))))));
  }

  async function compare(ids) {
    const body = await getJSON("/compare?" + new URLSearchParams({ papers: ids }));
    status(`${body.items.length} papers side by side`);
    const rows = [
      ["Tasks", "tasks"], ["Proposes", "proposed_methods"], ["Datasets", "datasets"], ["Metrics", "metrics"],
    ];
    const chips = (refs, type) => refs.map((r) => el("span", { class: "chip " + type }, label(r)));
    // The chip colour is the entity type: "proposed_xs" and "xs" hold entities of type "X".
    const typeOf = (field) => {
      const base = field.replace(/^proposed_/, "").replace(/s$/, "");
      return base.charAt(0).toUpperCase() + base.slice(1);
    };
    return el("table", { class: "board", id: "compare" },
      el("tr", {}, el("th", {}, ""), body.items.map((i) => el("th", {}, paperLink(i.paper)))),
      rows.map(([title, field]) => el("tr", {}, el("th", {}, title),
        body.items.map((i) => el("td", {}, chips(i[field], typeOf(field)))))),
      el("tr", {}, el("th", {}, "Results"), body.items.map((i) => el("td", {},
        i.results.map((r) => el("div", {},
          el("strong", {}, r.value.text), " ", label(r.metric),
          r.dataset ? ` on ${label(r.dataset)}` : "", r.relative ? " (relative)" : ""))))));
  }

  // A task with its broader tasks above and a tree of narrower ones, each expandable.
  async function taskTree(key) {
    const task = await getJSON("/entities/task/" + encodeURIComponent(key));
    status(`${task.paper_count} papers address “${task.label}” itself`);
    return el("div", { class: "tree", id: "task-tree" },
      el("h1", { class: "view-title" }, task.label),
      task.broader.length ? el("p", {}, "Broader: ",
        task.broader.map((b) => el("a", { class: "chip Task", href: "?task=" + encodeURIComponent(b.key) }, b.label))) : null,
      el("p", {}, el("a", { href: "/papers?task=" + encodeURIComponent(key) }, "Papers on it or a narrower task (JSON)")),
      el("h3", {}, `Narrower (${task.narrower.length})`),
      narrowerList(task.narrower));
  }

  function narrowerList(items) {
    return el("ul", {}, items.map((t) => {
      const li = el("li", { class: "narrower", "data-key": t.key });
      const toggle = el("button", { type: "button", class: "toggle", title: "Expand", "aria-label": "Expand " + t.label }, "▸");
      toggle.addEventListener("click", async () => {
        if (li.dataset.open) { li.lastChild.remove(); delete li.dataset.open; toggle.textContent = "▸"; return; }
        const child = await getJSON("/entities/task/" + encodeURIComponent(t.key));
        li.dataset.open = "1";
        toggle.textContent = "▾";
        li.append(child.narrower.length ? narrowerList(child.narrower) : el("ul", {}, el("li", { class: "baseline" }, "no narrower task")));
      });
      li.append(toggle, el("a", { href: "?task=" + encodeURIComponent(t.key) }, t.label));
      return li;
    }));
  }

  async function start() {
    const params = new URLSearchParams(location.search);
    let view;
    try {
      if (params.get("board")) view = await board(params.get("board"));
      else if (params.get("related")) view = await related(params.get("related"));
      else if (params.get("compare")) view = await compare(params.get("compare"));
      else if (params.get("task") && !params.has("min_results")) view = await taskTree(params.get("task"));
      else view = await leaderboards(params);
    } catch (error) {
      status(error.message);
      return;
    }
    $("view").replaceChildren(view);
    document.body.dataset.state = "ready";
  }

  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const input of $("filters").elements) if (input.name && input.value) query.set(input.name, input.value);
    location.search = "?" + query;
  });
  start();
})();
