/* The explorer: search → neighbourhood graph → side panel.
 *
 * Everything comes from the service's own endpoints:
 *   GET /graph?format=cytoscape&focus=…   the drawn graph (the same exporter as downloads)
 *   GET /graph/search?q=…                 the search box
 *   GET /graph/node?id=…                  the side panel
 *   GET /graph/formats                    the download links
 *   GET /graph/queries/{name}             the "view as SPARQL" link
 * No library beyond Cytoscape.js (+ fcose layout), served from /static/vendor.
 */
(function () {
  "use strict";

  // Filled from GET /schema (kg.schema) before anything is drawn: node types,
  // their colours and the labels of paper → entity relations.
  const TYPES = [];
  const COLOURS = {};
  const PREDICATES = {};

  function badgeStyle(type) {
    return COLOURS[type] ? `background:${COLOURS[type]}` : null;
  }

  async function loadSchema() {
    const schema = await getJSON("/schema");
    TYPES.splice(0, TYPES.length, schema.paper.name, ...schema.entity_types.map((t) => t.name));
    COLOURS[schema.paper.name] = schema.paper.colour;
    for (const type of schema.entity_types) {
      COLOURS[type.name] = type.colour;
      for (const relation of type.relations) PREDICATES[relation.name] = relation.label;
    }
    state.types = new Set(TYPES);
  }

  const $ = (id) => document.getElementById(id);
  const state = {
    focus: null,          // IRI of the picked node, or null for the whole graph
    focusType: null,
    types: new Set(TYPES),
    depth: 2,
    minSupport: 1,
    limit: 500,
    projection: "bipartite",
    formats: [],
    counts: {},
  };

  // ------------------------------------------------------------- helpers

  const { el, getJSON } = window.kgDom;  // dom.js, shared by the explorer's pages

  function graphParams(extra) {
    const params = new URLSearchParams();
    if (state.focus) {
      params.set("focus", state.focus);
      params.set("depth", String(state.depth));
    }
    if (state.types.size !== TYPES.length) params.set("types", [...state.types].join(","));
    if (state.minSupport > 1) params.set("min_support", String(state.minSupport));
    params.set("limit", String(state.limit));
    if (state.projection !== "bipartite") params.set("projection", state.projection);
    for (const [key, value] of Object.entries(extra || {})) params.set(key, value);
    return params;
  }

  function setStatus(parts) {
    const status = $("status");
    status.replaceChildren(...parts);
  }

  // ------------------------------------------------------------- the graph

  const layoutName = cytoscape("layout", "fcose") ? "fcose" : "cose";

  const cy = cytoscape({
    container: $("graph"),
    minZoom: 0.15,
    maxZoom: 3,
    style: [
      {
        selector: "node",
        style: {
          "background-color": (n) => COLOURS[n.data("type")] || "#999",
          label: "data(label)",
          width: (n) => nodeSize(n),
          height: (n) => nodeSize(n),
          "font-size": 11,
          color: "#1d2330",
          "text-valign": "bottom",
          "text-margin-y": 3,
          "text-wrap": "ellipsis",
          "text-max-width": "130px",
          "text-background-color": "#ffffff",
          "text-background-opacity": 0.75,
          "text-background-padding": "1px",
          "border-width": 1.5,
          "border-color": "#ffffff",
          "min-zoomed-font-size": 6,
        },
      },
      {
        selector: 'node[type = "Paper"]',
        style: {
          shape: "round-rectangle",
          "font-size": 9,
          color: "#4b5263",
          "text-max-width": "110px",
        },
      },
      {
        selector: "node.focus",
        style: { "border-width": 4, "border-color": "#1d2330", "font-weight": "bold", "font-size": 13 },
      },
      {
        selector: "node:selected",
        style: { "border-width": 4, "border-color": "#ffcc00", "overlay-opacity": 0 },
      },
      { selector: "node.faded", style: { opacity: 0.4 } },
      {
        selector: "edge",
        style: {
          width: (e) => Math.min(1 + (Number(e.data("weight")) || 1) - 1, 8) || 1,
          "line-color": "#b7bdca",
          "curve-style": "haystack",
          opacity: 0.7,
        },
      },
      { selector: "edge.faded", style: { opacity: 0.15 } },
      { selector: "edge.near", style: { "line-color": "#6b7385", opacity: 1 } },
    ],
  });

  function nodeSize(node) {
    const papers = Number(node.data("paper_count")) || 1;
    if (node.data("type") === "Paper") return 22;
    return Math.round(18 + 9 * Math.sqrt(papers));
  }

  function runLayout(fit) {
    const graph = $("graph");
    graph.dataset.state = "layout";
    const options = layoutName === "fcose"
      ? {
        name: "fcose", quality: "default", animate: false, randomize: true,
        nodeRepulsion: () => 14000, idealEdgeLength: () => 95, nodeSeparation: 80,
        packComponents: true, fit: fit !== false, padding: 40,
      }
      : { name: "cose", animate: false, fit: fit !== false, padding: 40 };
    const layout = cy.layout(options);
    layout.one("layoutstop", () => {
      if (fit !== false) settleZoom();
      graph.dataset.state = cy.nodes().length ? "ready" : "empty";
    });
    layout.run();
  }

  function settleZoom() {
    // A small neighbourhood fitted to the canvas would be drawn huge: cap the zoom.
    if (cy.zoom() > 1.4) {
      cy.zoom(1.4);
      cy.center();
    }
  }

  function resized() {
    // The side panel takes width from the canvas: tell Cytoscape, keep the graph in view.
    cy.resize();
    if (cy.nodes().length) {
      cy.fit(undefined, 40);
      settleZoom();
    }
  }

  async function load() {
    const graph = $("graph");
    graph.dataset.state = "loading";
    setStatus(["Loading…"]);
    let data;
    let response;
    try {
      response = await fetch("/graph?" + graphParams({ format: "cytoscape" }), {
        headers: { Accept: "application/vnd.cytoscape+json" },
      });
      if (response.status === 413 && !state.focus) {
        // A large graph is not drawn whole (KG_GRAPH_MAX_PAPERS): start from a search.
        graph.dataset.state = "too-large";
        setStatus(["The graph is too large to draw whole: search for a paper or an entity ",
                   "to see its neighbourhood."]);
        return;
      }
      if (!response.ok) {
        let detail = response.statusText;
        try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
        throw new Error(detail);
      }
      data = await response.json();
    } catch (error) {
      graph.dataset.state = "error";
      setStatus([el("span", { class: "warn" }, "Could not load the graph: " + error.message)]);
      return;
    }
    cy.elements().remove();
    cy.add(data.elements.nodes);
    cy.add(data.elements.edges);
    if (state.focus) cy.getElementById(state.focus).addClass("focus");
    $("empty").hidden = cy.nodes().length > 0;
    updateStatus(data.data || {});
    updateLinks();
    updateLegendCounts();
    if (cy.nodes().length) runLayout(true);
    else graph.dataset.state = "empty";
  }

  async function expand(node) {
    // Double-click: add the node's direct neighbours to what is drawn.
    const params = graphParams({ format: "cytoscape", focus: node.id(), depth: "1" });
    let data;
    try {
      data = await getJSON("/graph?" + params);
    } catch (error) {
      setStatus([el("span", { class: "warn" }, "Could not expand: " + error.message)]);
      return;
    }
    const added = cy.collection();
    for (const item of data.elements.nodes) {
      if (cy.getElementById(item.data.id).empty()) {
        const pos = node.position();
        added.merge(cy.add({ ...item, position: { x: pos.x + Math.random() * 40 - 20, y: pos.y + Math.random() * 40 - 20 } }));
      }
    }
    for (const item of data.elements.edges) {
      if (cy.getElementById(item.data.id).empty()) added.merge(cy.add(item));
    }
    updateStatus({ truncated: data.data && data.data.truncated, total_nodes: cy.nodes().length });
    updateLegendCounts();
    if (added.length) {
      const layout = cy.layout(layoutName === "fcose"
        ? { name: "fcose", randomize: false, animate: true, animationDuration: 400, fit: false,
          nodeRepulsion: () => 9000, idealEdgeLength: () => 70 }
        : { name: "cose", animate: false, fit: false });
      layout.run();
    }
  }

  function updateStatus(info) {
    const nodes = cy.nodes().length;
    const edges = cy.edges().length;
    const parts = [`${nodes} nodes, ${edges} edges`];
    if (info.truncated) {
      parts.push(el("br"), el("span", { class: "warn" },
        `cut to the ${nodes} most supported of ${info.total_nodes} nodes`));
    }
    setStatus(parts);
  }

  function updateLegendCounts() {
    for (const type of TYPES) {
      const count = cy.nodes(`[type = "${type}"]`).length;
      const target = document.querySelector(`#legend [data-count="${type}"]`);
      if (target) target.textContent = String(count);
    }
  }

  // ------------------------------------------------------------- links

  async function updateLinks() {
    const downloads = $("downloads");
    downloads.replaceChildren(...state.formats.map((f) =>
      el("li", {}, el("a", {
        href: "/graph?" + graphParams({ format: f.name, download: "true" }),
        title: f.description, download: true,
      }, f.name))));
    const name = state.focus ? "neighbourhood" : "edges";
    try {
      const response = await fetch("/graph/queries/" + name);
      let text = await response.text();
      if (state.focus && /^[^<>"{}|^`\\\s]+$/.test(state.focus)) {
        text += "\nVALUES ?focus { <" + state.focus + "> }\n";
      }
      $("link-sparql").href = "/sparql#query=" + encodeURIComponent(text);
    } catch (_) {
      $("link-sparql").href = "/sparql";
    }
  }

  function saveUrl() {
    const params = new URLSearchParams();
    if (state.focus) params.set("focus", state.focus);
    if (state.focus) params.set("depth", String(state.depth));
    if (state.types.size !== TYPES.length) params.set("types", [...state.types].join(","));
    if (state.minSupport > 1) params.set("min_support", String(state.minSupport));
    if (state.projection !== "bipartite") params.set("projection", state.projection);
    const query = params.toString();
    history.replaceState(null, "", query ? "?" + query : location.pathname);
  }

  // ------------------------------------------------------------- side panel

  async function showPanel(iri) {
    const panel = $("panel");
    const body = $("panel-body");
    if (panel.hidden) {
      panel.hidden = false;
      resized();
    }
    body.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    let node;
    try {
      node = await getJSON("/graph/node?" + new URLSearchParams({ id: iri }));
    } catch (error) {
      body.replaceChildren(el("p", { class: "warn" }, error.message));
      return;
    }
    const parts = [
      el("span", { class: "badge " + node.type, style: badgeStyle(node.type) }, node.type),
      el("h1", { id: "panel-label" }, node.title || node.label),
      el("div", { class: "iri" }, node.iri),
    ];
    if (node.aliases && node.aliases.length) {
      parts.push(el("div", { class: "aliases" }, "Also: " + node.aliases.join(", ")));
    }
    parts.push(el("div", { class: "actions" },
      el("button", { type: "button", onclick: () => pick(node.iri, node.type) }, "Centre here"),
      el("button", {
        type: "button",
        onclick: () => { const n = cy.getElementById(node.iri); if (n.nonempty()) expand(n); },
      }, "Expand")));
    if (node.abstract) {
      const abstract = el("p", { class: "abstract clamped" }, node.abstract);
      const more = el("button", {
        type: "button", class: "more",
        onclick: () => {
          const open = abstract.classList.toggle("clamped");
          more.textContent = open ? "more" : "less";
        },
      }, "more");
      parts.push(el("h3", {}, "Abstract"), abstract, more);
    }
    if (node.entities && node.entities.length) {
      parts.push(el("h3", {}, `Entities (${node.entities.length})`), el("ul", { class: "entities" },
        node.entities.map((e) => el("li", {
          title: (PREDICATES[e.predicate] || e.predicate) + " · " + e.iri,
          onclick: () => pick(e.iri, e.type),
        }, el("span", { class: "badge " + e.type, style: badgeStyle(e.type) }, e.label)))));
    }
    if (node.papers && node.papers.length) {
      parts.push(el("h3", {}, `Papers (${node.papers.length})`), el("ul", { class: "papers" },
        node.papers.map((p) => el("li", { class: "paper" },
          el("div", { class: "title", onclick: () => pick(p.iri, "Paper") }, p.title || p.label),
          el("div", { class: "how" }, (PREDICATES[p.predicate] || p.predicate) + " · " + p.id),
          el("div", { class: "snippet" }, p.snippet)))));
    }
    if (node.claims && node.claims.length) {
      parts.push(el("h3", {}, `Claims (${node.claims.length})`), el("ul", {},
        node.claims.map((c) => el("li", { class: "claim" },
          c.kind ? el("span", { class: "kind" }, c.kind) : null,
          c.before, el("mark", {}, c.claim), c.after))));
    }
    // Related papers, leaderboards and narrower tasks: results-panel.js.
    if (window.kgResultsPanel) window.kgResultsPanel(node, parts, { el, pick });
    body.replaceChildren(...parts);
  }

  // ------------------------------------------------------------- search

  let searchTimer = null;
  let searchSeq = 0;
  let results = [];
  let active = -1;

  async function runSearch(text) {
    const seq = ++searchSeq;
    const list = $("search-results");
    if (!text.trim()) { list.hidden = true; results = []; return; }
    let data;
    try {
      data = await getJSON("/graph/search?" + new URLSearchParams({ q: text.trim(), limit: "15" }));
    } catch (error) {
      return;
    }
    if (seq !== searchSeq) return; // a newer search is on its way
    results = data.results;
    active = results.length ? 0 : -1;
    renderResults();
  }

  function renderResults() {
    const list = $("search-results");
    if (!results.length) {
      list.replaceChildren(el("li", { class: "none" }, "No match"));
    } else {
      list.replaceChildren(...results.map((r, i) => el("li", {
        role: "option", "aria-selected": i === active ? "true" : "false",
        "data-iri": r.iri,
        onmousedown: (event) => { event.preventDefault(); choose(i); },
      },
      el("span", { class: "badge " + r.type, style: badgeStyle(r.type) }, r.type),
      el("span", { class: "label", title: r.match }, r.label),
      r.type !== "Paper" ? el("span", { class: "count" }, r.papers + (r.papers === 1 ? " paper" : " papers")) : null)));
    }
    list.hidden = false;
  }

  function choose(index) {
    const result = results[index];
    if (!result) return;
    $("search-results").hidden = true;
    $("search").value = result.label;
    pick(result.iri, result.type);
  }

  function pick(iri, type) {
    state.focus = iri;
    state.focusType = type;
    if (type === "Paper" && state.projection === "entity") {
      // Papers are not nodes of the co-occurrence graph: show them with their entities.
      state.projection = "bipartite";
      $("projection").value = "bipartite";
    }
    // Around an entity, depth 2 reaches its papers and what they name; around a paper, 1 does.
    state.depth = state.projection === "bipartite" && type !== "Paper" ? 2 : 1;
    $("depth").value = String(state.depth);
    saveUrl();
    load().then(() => {
      const node = cy.getElementById(iri);
      if (node.nonempty()) node.select();
    });
    showPanel(iri);
  }

  // ------------------------------------------------------------- wiring

  function buildLegend() {
    $("legend").replaceChildren(...TYPES.map((type) => el("li", {},
      el("label", {},
        el("input", {
          type: "checkbox", value: type, checked: state.types.has(type),
          onchange: (event) => {
            if (event.target.checked) state.types.add(type); else state.types.delete(type);
            if (!state.types.size) { state.types.add(type); event.target.checked = true; return; }
            saveUrl(); load();
          },
        }),
        el("span", { class: "swatch " + type, style: `background:${COLOURS[type]}` }),
        type,
        el("span", { class: "count", "data-count": type }, "")))));
  }

  function readUrl() {
    const params = new URLSearchParams(location.search);
    state.focus = params.get("focus");
    const depth = Number(params.get("depth"));
    if (depth >= 1 && depth <= 3) state.depth = depth;
    const types = (params.get("types") || "").split(",").filter((t) => TYPES.includes(t));
    if (types.length) state.types = new Set(types);
    const support = Number(params.get("min_support"));
    if (support >= 1) state.minSupport = support;
    if (params.get("projection") === "entity") state.projection = "entity";
    $("depth").value = String(state.depth);
    $("min-support").value = String(state.minSupport);
    $("projection").value = state.projection;
    $("limit").value = String(state.limit);
  }

  function wire() {
    const search = $("search");
    search.addEventListener("input", () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => runSearch(search.value), 150);
    });
    search.addEventListener("keydown", async (event) => {
      const list = $("search-results");
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (!results.length) return;
        event.preventDefault();
        active = (active + (event.key === "ArrowDown" ? 1 : -1) + results.length) % results.length;
        renderResults();
      } else if (event.key === "Enter") {
        event.preventDefault();
        clearTimeout(searchTimer);
        if (list.hidden || !results.length) await runSearch(search.value);
        choose(Math.max(active, 0));
      } else if (event.key === "Escape") {
        list.hidden = true;
      }
    });
    search.addEventListener("blur", () => { setTimeout(() => { $("search-results").hidden = true; }, 150); });

    $("depth").addEventListener("change", (e) => { state.depth = Number(e.target.value); saveUrl(); if (state.focus) load(); });
    $("min-support").addEventListener("change", (e) => {
      state.minSupport = Math.max(1, Number(e.target.value) || 1); saveUrl(); load();
    });
    $("limit").addEventListener("change", (e) => {
      state.limit = Math.max(10, Math.min(5000, Number(e.target.value) || 500)); load();
    });
    $("projection").addEventListener("change", (e) => {
      state.projection = e.target.value;
      if (state.projection === "entity" && state.focusType === "Paper") state.focus = null;
      saveUrl(); load();
    });
    $("overview").addEventListener("click", () => {
      state.focus = null; state.focusType = null; $("search").value = ""; saveUrl(); load();
    });
    $("relayout").addEventListener("click", () => runLayout(true));
    $("panel-close").addEventListener("click", () => {
      $("panel").hidden = true;
      cy.nodes().unselect();
      resized();
    });
    window.addEventListener("resize", () => cy.resize());

    cy.on("tap", "node", (event) => {
      const node = event.target;
      cy.elements().removeClass("faded near");
      const around = node.closedNeighborhood();
      cy.elements().not(around).addClass("faded");
      around.edges().addClass("near");
      showPanel(node.id());
    });
    cy.on("tap", (event) => {
      if (event.target === cy) cy.elements().removeClass("faded near");
    });
    cy.on("dbltap", "node", (event) => expand(event.target));
  }

  async function start() {
    await loadSchema();
    buildLegend();
    readUrl();
    wire();
    try {
      state.formats = await getJSON("/graph/formats");
    } catch (_) {
      state.formats = [];
    }
    await load();
    if (state.focus) showPanel(state.focus);
  }

  // For tests and the curious: the Cytoscape instance and the state.
  window.kgExplorer = { cy, state, pick, load };
  start();
})();
