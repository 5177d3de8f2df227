// The SPARQL editor page: example queries and prefixes come from
// /sparql/examples; queries go to /sparql with the chosen Accept header and
// SELECT/ASK JSON results are drawn as a table. No external assets.
"use strict";

const $ = (id) => document.getElementById(id);
let prefixes = {};

function prefixBlock(names) {
  return Object.entries(prefixes)
    .filter(([name]) => !names || names.has(name))
    .map(([name, iri]) => `PREFIX ${name}: <${iri}>`).join("\n");
}

function compact(iri) {
  for (const [name, ns] of Object.entries(prefixes)) {
    if (iri.startsWith(ns) && iri.length > ns.length) return `${name}:${iri.slice(ns.length)}`;
  }
  return iri;
}

// Papers and entities are named in the w3id.org namespace, which this server
// answers at /id/…: link there, not to the outside world.
const ID_NAMESPACE = "https://w3id.org/mlkg/id/";

function localHref(iri) {
  return iri.startsWith(ID_NAMESPACE) ? `/id/${iri.slice(ID_NAMESPACE.length)}` : iri;
}

function cell(term) {
  const td = document.createElement("td");
  if (!term) return td;
  if (term.type === "uri") {
    td.className = "uri";
    const a = document.createElement("a");
    a.href = localHref(term.value);
    a.textContent = compact(term.value);
    a.title = term.value;
    td.appendChild(a);
  } else if (term.type === "bnode") {
    td.textContent = `_:${term.value}`;
  } else {
    td.textContent = term.value;
    const extra = term["xml:lang"] ? `@${term["xml:lang"]}` : term.datatype ? compact(term.datatype) : "";
    if (extra && !extra.endsWith("xsd:string") && !extra.endsWith("#string")) {
      const span = document.createElement("span");
      span.className = "dt";
      span.textContent = ` ${extra}`;
      td.appendChild(span);
    }
  }
  return td;
}

function renderTable(doc) {
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const v of doc.head.vars) {
    const th = document.createElement("th");
    th.textContent = `?${v}`;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const binding of doc.results.bindings) {
    const row = body.insertRow();
    for (const v of doc.head.vars) row.appendChild(cell(binding[v]));
  }
  return table;
}

async function run() {
  const accept = $("accept").value;
  const status = $("status");
  const out = $("results");
  $("run").disabled = true;
  status.className = "";
  status.textContent = "Running…";
  out.replaceChildren();
  const started = performance.now();
  try {
    const response = await fetch("/sparql", {
      method: "POST",
      headers: { "Content-Type": "application/sparql-query", Accept: accept },
      body: $("query").value,
    });
    const ms = Math.round(performance.now() - started);
    const type = (response.headers.get("Content-Type") || "").split(";")[0];
    if (!response.ok) {
      const problem = type.includes("json") ? await response.json() : { detail: await response.text() };
      status.className = "error";
      status.textContent = `${response.status} ${problem.title || ""}: ${problem.detail || ""}`;
      return;
    }
    if (type === "application/sparql-results+json") {
      const doc = await response.json();
      if ("boolean" in doc) {
        status.textContent = `ASK → ${doc.boolean} (${ms} ms)`;
        return;
      }
      status.textContent = `${doc.results.bindings.length} rows (${ms} ms)`;
      out.appendChild(renderTable(doc));
    } else {
      const pre = document.createElement("pre");
      pre.className = "raw";
      pre.textContent = await response.text();
      status.textContent = `${type} (${ms} ms)`;
      out.appendChild(pre);
    }
  } catch (err) {
    status.className = "error";
    status.textContent = `request failed: ${err}`;
  } finally {
    $("run").disabled = false;
  }
}

async function init() {
  const response = await fetch("/sparql/examples");
  const data = await response.json();
  prefixes = data.prefixes;
  const select = $("examples");
  for (const ex of data.examples) {
    const option = document.createElement("option");
    option.value = ex.name;
    option.textContent = ex.title;
    option.dataset.query = ex.query;
    option.dataset.description = ex.description;
    select.appendChild(option);
  }
  select.addEventListener("change", () => {
    const option = select.selectedOptions[0];
    if (!option.value) return;
    $("query").value = option.dataset.query;
    $("description").textContent = option.dataset.description;
  });
  $("query").value = `${prefixBlock()}\n\nSELECT ?paper ?id ?title WHERE {\n  ?paper a kg:Paper ;\n         dcterms:identifier ?id .\n  OPTIONAL { ?paper dcterms:title ?title }\n}\nLIMIT 20\n`;
  // The explorer links here as /sparql#query=<text> ("view as SPARQL"): prefill it.
  if (location.hash.startsWith("#query=")) {
    try {
      $("query").value = decodeURIComponent(location.hash.slice("#query=".length));
    } catch (_) { /* a malformed link: keep the default query */ }
  }
}

$("run").addEventListener("click", run);
$("query").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) run();
});
init().catch((err) => { $("status").textContent = `could not load examples: ${err}`; });
