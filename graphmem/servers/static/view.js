// graphmem graph view: draws one scope's entities and facts (Cytoscape.js), shows an entity's facts
// with their source memories, and the quarantine with its SHACL reasons. Every value from the store
// goes into the page as text (textContent), never as markup.
(function () {
  "use strict";

  const body = document.body;
  const cfg = { graph: body.dataset.graph, memory: body.dataset.memory, auth: body.dataset.auth };
  const KEY = "graphmem.view.key";
  const scopeQuery = window.location.search; // user_id/agent_id/run_id narrowing, passed on as given
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#17becf", "#bcbd22", "#8c6d31"];
  const UNTYPED = "(untyped)";

  // what tests (and the curious, from the console) read: the rendered graph and its state
  const hook = (window.graphmemView = { ready: false, error: null, cy: null, counts: null, selected: null });

  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (name === "class") node.className = value;
      else if (name.startsWith("data-")) node.setAttribute(name, value);
      else node[name] = value;
    }
    for (const child of children) {
      if (child === undefined || child === null) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const plural = (count, one, many) => `${count} ${count === 1 ? one : many}`;
  const day = (iso) => (iso ? iso.slice(0, 10) : "");
  // gm:livesIn -> livesIn; http://www.w3.org/ns/shacl#ClassConstraintComponent -> ClassConstraintComponent
  const localName = (name) => {
    const text = name || "";
    if (text.includes("#")) return text.slice(text.lastIndexOf("#") + 1);
    if (text.includes("://")) return text.slice(text.lastIndexOf("/") + 1);
    return text.slice(text.indexOf(":") + 1);
  };

  // -- the API key (REST server only) ---------------------------------------------------------------
  function takeKeyFromFragment() {
    if (cfg.auth !== "key" || !window.location.hash) return;
    const given = new URLSearchParams(window.location.hash.slice(1)).get("key");
    if (given) sessionStorage.setItem(KEY, given);
    // the key leaves the address bar (and the history) as soon as it is read
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }

  function askForKey(message) {
    const form = $("keyform");
    form.hidden = false;
    $("keyerror").textContent = message || "";
    $("status").textContent = "an API key is needed to read this scope";
    $("key").focus();
  }

  $("keyform").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY, key);
    $("key").value = "";
    $("keyform").hidden = true;
    load();
  });

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  async function getJSON(url) {
    const headers = { Accept: "application/json" };
    if (cfg.auth === "key") {
      const key = sessionStorage.getItem(KEY);
      if (!key) throw new ApiError(401, "");
      headers.Authorization = "Bearer " + key;
    }
    const response = await fetch(url, { headers, cache: "no-store", credentials: "omit" });
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      throw new ApiError(response.status, (data && (data.detail || data.title)) || response.statusText);
    }
    return data;
  }

  // -- the graph ----------------------------------------------------------------------------------------
  let data = null;
  let cy = null;
  const colours = new Map();
  const byId = new Map();
  const memoryCache = new Map();

  function classOf(entity) {
    return entity.types && entity.types.length ? entity.types[0] : UNTYPED;
  }

  function colourFor(cls) {
    return cls === UNTYPED ? "#a0a7b4" : colours.get(cls);
  }

  function elements() {
    const classes = [...new Set(data.entities.map(classOf))].filter((c) => c !== UNTYPED).sort();
    classes.forEach((cls, i) => colours.set(cls, PALETTE[i % PALETTE.length]));
    const nodes = data.entities.map((e) => {
      byId.set(e.id, e);
      return {
        group: "nodes",
        data: { id: e.id, label: e.name, cls: classOf(e), colour: colourFor(classOf(e)),
          size: Math.min(48, 18 + 6 * Math.sqrt(e.mentions || 0)) },
      };
    });
    const edges = [];
    let notDrawn = 0;
    for (const f of data.facts) {
      if (!f.target) continue; // a literal value: shown in the panel, not an edge
      if (!byId.has(f.source.id) || !byId.has(f.target.id)) {
        notDrawn += 1;
        continue;
      }
      edges.push({
        group: "edges",
        data: { id: f.id, source: f.source.id, target: f.target.id, label: localName(f.relation_name) },
        classes: f.valid_to ? "closed" : "",
      });
    }
    return { nodes, edges, notDrawn };
  }

  const STYLE = [
    { selector: "node", style: {
      "background-color": "data(colour)", label: "data(label)", width: "data(size)", height: "data(size)",
      "font-size": 11, color: "#1f2430", "text-valign": "bottom", "text-margin-y": 4,
      "text-outline-color": "#ffffff", "text-outline-width": 2, "border-width": 1, "border-color": "#ffffff",
      "min-zoomed-font-size": 7 } },
    { selector: "node:selected", style: { "border-width": 4, "border-color": "#1f2430" } },
    { selector: "edge", style: {
      width: 1.6, "line-color": "#8a94a6", "target-arrow-color": "#8a94a6", "target-arrow-shape": "triangle",
      "curve-style": "bezier", label: "data(label)", "font-size": 9, color: "#4a5262",
      "text-rotation": "autorotate", "text-background-color": "#ffffff", "text-background-opacity": 0.85,
      "text-background-padding": 1, "min-zoomed-font-size": 7 } },
    { selector: "edge.closed", style: { "line-style": "dashed", opacity: 0.35 } },
    { selector: "edge:selected", style: { "line-color": "#1f2430", "target-arrow-color": "#1f2430", width: 3 } },
    { selector: ".faded", style: { opacity: 0.12 } },
  ];

  function draw() {
    const { nodes, edges, notDrawn } = elements();
    // a force-directed layout while it stays quick (its cost grows with the square of the nodes);
    // past that, rings by degree: hubs in the middle
    const layout = nodes.length <= 250
      ? { name: "cose", animate: false, randomize: true, padding: 40, nodeRepulsion: () => 400000,
        idealEdgeLength: () => 110, edgeElasticity: () => 100, gravity: 60, componentSpacing: 120,
        numIter: nodes.length <= 60 ? 1000 : 300 }
      : { name: "concentric", animate: false, padding: 20, minNodeSpacing: 8,
        concentric: (node) => node.degree(), levelWidth: () => 4 };
    cy = cytoscape({
      container: $("graph"), elements: [...nodes, ...edges], style: STYLE, layout,
      minZoom: 0.1, maxZoom: 4, selectionType: "single", hideEdgesOnViewport: nodes.length > 250,
    });
    if (cy.zoom() > 1.25) { // a handful of nodes: readable, not blown up to the whole canvas
      cy.zoom(1.25);
      cy.center();
    }
    hook.cy = cy;
    cy.on("tap", "node", (event) => select(event.target.id()));
    cy.on("tap", (event) => {
      if (event.target === cy) select(null);
    });
    const closed = edges.filter((e) => e.classes === "closed").length;
    hook.counts = { nodes: cy.nodes().length, edges: cy.edges().length, closed, notDrawn,
      quarantine: data.quarantine.length };
    return { closed, notDrawn };
  }

  function header(closed, notDrawn) {
    const scope = Object.entries(data.scope).map(([k, v]) => `${k}=${v}`).join(" ");
    $("scope").textContent = scope;
    const literals = data.facts.filter((f) => !f.target).length;
    const n = plural;
    const parts = [n(data.entities.length, "entity", "entities"),
      `${n(data.facts.length - literals, "fact", "facts")} (${closed} closed)`];
    if (literals) parts.push(n(literals, "value", "values"));
    parts.push(`${data.quarantine.length} quarantined`);
    $("counts").textContent = parts.join(" · ");
    const notes = [];
    if (data.truncated.entities) notes.push(`only the first ${data.limits.max_entities} entities are drawn`);
    if (data.truncated.facts) notes.push(`only the first ${data.limits.max_facts} facts are read`);
    if (notDrawn) notes.push(`${notDrawn} facts end outside the drawn entities`);
    if (!data.entities.length) notes.push("nothing is stored in this scope yet");
    $("status").textContent = notes.join("; ");
    $("status").hidden = notes.length === 0;
  }

  function legend() {
    const counts = new Map();
    for (const e of data.entities) counts.set(classOf(e), (counts.get(classOf(e)) || 0) + 1);
    const list = $("legend");
    list.replaceChildren();
    for (const cls of [...counts.keys()].sort()) {
      const swatch = el("span", { class: "swatch" });
      swatch.style.backgroundColor = colourFor(cls);
      list.append(el("li", { "data-class": cls }, swatch, `${cls} ${counts.get(cls)}`));
    }
  }

  // -- the side panel -------------------------------------------------------------------------------
  function select(id) {
    hook.selected = id;
    if (cy) {
      cy.elements().removeClass("faded");
      if (id) {
        const node = cy.getElementById(id);
        node.select();
        cy.elements().not(node.closedNeighborhood()).addClass("faded");
      } else {
        cy.elements().unselect();
      }
    }
    const panel = $("panel");
    if (!id || !byId.has(id)) {
      panel.replaceChildren(el("p", { class: "hint" },
        "Select an entity to see its facts and the memories that state them."));
      return;
    }
    const entity = byId.get(id);
    const facts = data.facts.filter((f) => f.source.id === id || (f.target && f.target.id === id));
    const chips = el("p", { class: "types" });
    for (const t of entity.types.length ? entity.types : [UNTYPED]) {
      const chip = el("span", { class: "chip" }, t);
      chip.style.borderColor = colourFor(t) || colourFor(UNTYPED);
      chips.append(chip);
    }
    const list = el("ul", { class: "facts" });
    for (const f of facts) list.append(factItem(f, id));
    const parts = [el("h2", { class: "entity-name" }, entity.name), chips];
    if (entity.aliases.length) parts.push(el("p", { class: "aliases" }, "also: " + entity.aliases.join(", ")));
    parts.push(el("p", { class: "mentions" }, `${plural(entity.mentions, "memory mentions", "memories mention")} it · id ${entity.id.slice(0, 8)}`),
      el("h3", null, `Facts (${facts.length})`), list);
    panel.replaceChildren(...parts);
    loadMemories(panel);
  }

  function endButton(end) {
    if (!end) return null;
    const button = el("button", { type: "button", class: "end" }, end.name || end.id.slice(0, 8));
    button.addEventListener("click", () => select(end.id));
    return button;
  }

  function factItem(f, selectedId) {
    const closed = Boolean(f.valid_to);
    const statement = el("div", { class: "statement" },
      f.source.id === selectedId ? el("strong", null, f.source.name) : endButton(f.source),
      el("span", { class: "relation", title: f.relation }, ` ${f.relation_name} `),
      f.target ? (f.target.id === selectedId ? el("strong", null, f.target.name) : endButton(f.target))
        : el("code", { class: "value" }, f.value));
    const valid = el("div", { class: "valid" },
      `valid ${day(f.valid_from) || "…"} → ${day(f.valid_to) || "now"}`, closed ? el("span", { class: "closed-tag" }, "closed") : null);
    const memories = el("ul", { class: "memories" });
    for (const m of f.memories) {
      memories.append(el("li", { class: "memory", "data-memory-id": m.id },
        el("q", null, m.memory), el("div", { class: "memory-meta" }, "…")));
    }
    return el("li", { class: closed ? "fact closed" : "fact", "data-fact-id": f.id }, statement, valid,
      el("div", { class: "label" }, "stated by"), memories);
  }

  function memoryUrl(id) {
    return cfg.memory + encodeURIComponent(id) + scopeQuery;
  }

  async function loadMemories(panel) {
    for (const item of panel.querySelectorAll("li.memory")) {
      const id = item.dataset.memoryId;
      const meta = item.querySelector(".memory-meta");
      if (!memoryCache.has(id)) memoryCache.set(id, getJSON(memoryUrl(id)));
      try {
        const record = await memoryCache.get(id);
        const bits = [day(record.created_at), record.role, record.memory_type, `id ${record.id.slice(0, 8)}`];
        if (record.metadata && Object.keys(record.metadata).length) bits.push(JSON.stringify(record.metadata));
        meta.textContent = bits.filter(Boolean).join(" · ");
      } catch (err) {
        memoryCache.delete(id);
        meta.textContent = `not readable: ${err.message}`;
        meta.classList.add("error");
      }
      meta.dataset.loaded = "true";
    }
  }

  // -- the quarantine -------------------------------------------------------------------------------
  function quarantine() {
    $("q-count").textContent = String(data.quarantine.length);
    const list = $("q-list");
    list.replaceChildren();
    if (!data.quarantine.length) {
      list.append(el("li", { class: "hint" }, "nothing is quarantined in this scope"));
      return;
    }
    for (const q of data.quarantine) {
      const t = q.triple || {};
      const typed = (name, type) => (type ? `${name} (${type})` : name);
      const reasons = el("ul", { class: "reasons" });
      for (const r of q.reasons || []) {
        const where = [r.severity, localName(r.constraint), r.shape_label].filter(Boolean).join(" · ");
        reasons.append(el("li", { class: "reason" }, el("span", { class: "message" }, r.message || r.text || ""),
          where ? el("div", { class: "where" }, where) : null));
      }
      list.append(el("li", { class: "q-entry", "data-quarantine-id": q.id },
        el("div", { class: "statement" }, typed(t.source, t.source_type), el("span", { class: "relation" },
          ` ${t.relation} `), typed(String(t.target ?? t.value ?? ""), t.target_type)),
        el("div", { class: "valid" }, `quarantined ${day(q.created_at)} · ${plural(q.memory_ids.length, "memory", "memories")}`),
        reasons));
    }
  }

  // -- start --------------------------------------------------------------------------------------------
  async function load() {
    $("status").hidden = false;
    $("status").textContent = "loading…";
    try {
      data = await getJSON(cfg.graph + scopeQuery);
    } catch (err) {
      hook.error = err.message;
      if (cfg.auth === "key" && (err.status === 401 || err.status === 403)) {
        if (err.status === 401) sessionStorage.removeItem(KEY);
        askForKey(err.message);
      } else {
        $("status").textContent = `cannot read the graph: ${err.message}`;
        $("status").classList.add("error");
      }
      return;
    }
    hook.error = null;
    $("keyform").hidden = true;
    if (cy) cy.destroy();
    const { closed, notDrawn } = draw();
    header(closed, notDrawn);
    legend();
    quarantine();
    select(null);
    hook.ready = true;
    body.dataset.ready = "true";
  }

  $("show-closed").addEventListener("change", (event) => {
    if (cy) cy.edges(".closed").style("display", event.target.checked ? "element" : "none");
  });
  $("fit").addEventListener("click", () => cy && cy.fit(undefined, 30));

  takeKeyFromFragment();
  load();
})();
