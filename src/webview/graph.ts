/**
 * The Workflow Graph's webview script (bundled to media/graph.js). It lays out the workflow's
 * executors and edges with dagre (a maintained layered-graph layout) and draws them: nodes are
 * HTML (so they carry codicons, wrap text and take keyboard focus), edges an SVG underneath.
 * Kinds are told apart by codicon, colour and shape; each node lists the keys it owns, and the
 * key table names every key's owner. The executors of the running superstep are highlighted.
 * Clicking a node (or Enter on it) asks the host to reveal its definition in the workflow file.
 * The graph opens fitted to the panel (never enlarged past 100%), so it reads beside an editor;
 * Zoom in / out / Fit / 100% in the header, Ctrl+wheel and the + - 0 keys change the scale.
 *
 * Every message from the host is parsed with the shared schema (src/protocol/graph.ts); one that
 * does not parse is dropped and logged, and the panel keeps what it shows.
 */
// First: configures zod before any schema is built.
import "./zodJitless";
import dagre from "@dagrejs/dagre";
import type { GraphExecutorView, GraphLive, GraphToHost, GraphViewModel, HostToGraph } from "../protocol/graph";
import { parseGraphHostMessage } from "../protocol/graph";
import { el } from "./dom";
import { connectHost } from "./host";

const KIND: Record<GraphExecutorView["kind"], { icon: string; label: string }> = {
  code: { icon: "code", label: "code" },
  loader: { icon: "cloud-download", label: "loader" },
  agent: { icon: "sparkle", label: "agent" },
  commit: { icon: "law", label: "commit" },
  effect: { icon: "zap", label: "effect" },
  request: { icon: "person", label: "request" },
};

const SVG = "http://www.w3.org/2000/svg";
const app = document.getElementById("app")!;
let model: GraphViewModel | undefined;
/** The person's zoom: "fit" follows the panel's size; a number is a fixed scale (1 = 100%). */
let zoom: "fit" | number = "fit";
/** The laid-out graph's size at 100%. */
let natural = { width: 0, height: 0 };
const ZOOM_MIN = 0.2;
const ZOOM_MAX = 3;
const host = connectHost<GraphToHost, HostToGraph>({ name: "Workflow Graph", parse: parseGraphHostMessage, receive });

function receive(message: HostToGraph): void {
  switch (message.type) {
    case "load":
      model = message.model;
      render(message.model);
      return;
    case "live":
      if (!model) return;
      model = { ...model, live: message.live };
      showLive(message.live);
      return;
    case "notice":
      showNotice(message.level, message.message);
      return;
    default: {
      const never: never = message;
      console.warn(`Workflow Graph: unhandled message ${JSON.stringify(never)}`);
    }
  }
}

function render(m: GraphViewModel): void {
  const canvas = el("div", { className: "canvas", id: "canvas" });
  const nodes = new Map<string, HTMLElement>();
  for (const ex of m.executors) {
    const node = executorNode(ex, ex.id === m.start);
    nodes.set(ex.id, node);
    canvas.append(node);
  }
  app.replaceChildren(
    el("header", { className: "header" }, [
      el("span", { className: "codicon codicon-type-hierarchy" }),
      el("span", { className: "title" }, `${m.workflow.name} v${m.workflow.version}`),
      el("span", { className: "file" }, m.workflow.file),
      el("span", { className: "live", id: "live", role: "status", ariaLive: "polite" }),
      zoomControls(),
    ]),
    el("div", { className: "notice", id: "notice", role: "status", ariaLive: "polite" }),
    el("main", { className: "main" }, [
      el("div", { className: "scroller", id: "scroller" }, [el("div", { className: "stage", id: "stage" }, [canvas])]),
      keyTable(m),
      legend(),
    ]),
  );
  // Nodes are measured as rendered, then laid out.
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 56, edgesep: 16, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const [id, node] of nodes) g.setNode(id, { width: node.offsetWidth, height: node.offsetHeight });
  const labels: { name: string; text: string; conditional: boolean; v: string; w: string }[] = [];
  for (const edge of m.edges) {
    for (const v of edge.from) {
      for (const w of edge.to) {
        if (!nodes.has(v) || !nodes.has(w)) continue;
        const name = `${edge.id}:${v}->${w}`;
        const text = edge.conditional ? (edge.label ?? "when …") : (edge.label ?? "");
        const size = text ? { width: text.length * 6.5 + 12, height: 18, labelpos: "c" } : {};
        g.setEdge(v, w, size, name);
        labels.push({ name, text, conditional: edge.conditional, v, w });
      }
    }
  }
  dagre.layout(g);
  const size = g.graph();
  const width = Math.ceil(size.width ?? 0);
  const height = Math.ceil(size.height ?? 0);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("class", "edges");
  const defs = document.createElementNS(SVG, "defs");
  const marker = document.createElementNS(SVG, "marker");
  for (const [k, v] of Object.entries({
    id: "arrow",
    viewBox: "0 0 10 10",
    refX: "9",
    refY: "5",
    markerWidth: "7",
    markerHeight: "7",
    orient: "auto-start-reverse",
  }))
    marker.setAttribute(k, v);
  const tip = document.createElementNS(SVG, "path");
  tip.setAttribute("d", "M 0 0 L 10 5 L 0 10 z");
  tip.setAttribute("class", "arrow");
  marker.append(tip);
  defs.append(marker);
  svg.append(defs);
  canvas.prepend(svg);
  for (const l of labels) {
    const e = g.edge({ v: l.v, w: l.w, name: l.name }) as { points: { x: number; y: number }[]; x?: number; y?: number };
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", e.points.map((p, i) => `${i ? "L" : "M"} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(" "));
    path.setAttribute("class", l.conditional ? "edge conditional" : "edge");
    path.setAttribute("marker-end", "url(#arrow)");
    path.dataset.from = l.v;
    path.dataset.to = l.w;
    svg.append(path);
    if (l.text && e.x !== undefined && e.y !== undefined) {
      const label = el(
        "span",
        { className: l.conditional ? "edge-label conditional" : "edge-label", title: l.conditional ? "conditional edge" : "" },
        l.text,
      );
      label.dataset.from = l.v;
      label.dataset.to = l.w;
      label.style.left = `${e.x}px`;
      label.style.top = `${e.y}px`;
      canvas.append(label);
    }
  }
  for (const [id, node] of nodes) {
    const n = g.node(id);
    node.style.left = `${n.x - n.width / 2}px`;
    node.style.top = `${n.y - n.height / 2}px`;
  }
  natural = { width, height };
  applyZoom();
  resized.disconnect();
  resized.observe(document.getElementById("scroller")!);
  showLive(m.live);
  document.body.dataset.loaded = m.workflow.name;
}

// ---------------------------------------------------------------------------------------------
// Zoom

function zoomControls(): HTMLElement {
  const button = (action: string, icon: string, label: string, onclick: () => void): HTMLElement =>
    el("button", { className: "zoom-button", title: label, ariaLabel: label, data: { zoom: action }, onclick }, [
      el("span", { className: `codicon codicon-${icon}`, ariaHidden: "true" }),
    ]);
  return el("span", { className: "zoom", role: "group", ariaLabel: "Zoom" }, [
    button("out", "zoom-out", "Zoom out (-)", () => setZoom(scale() / 1.25)),
    el("span", { className: "zoom-level", id: "zoom-level", ariaLive: "polite" }),
    button("in", "zoom-in", "Zoom in (+)", () => setZoom(scale() * 1.25)),
    button("fit", "screen-normal", "Fit to view (0)", () => setZoom("fit")),
    button("actual", "screen-full", "Actual size, 100%", () => setZoom(1)),
  ]);
}

/** The scale the graph is drawn at now: the fitted one, or the person's. */
function scale(): number {
  if (zoom !== "fit") return zoom;
  const scroller = document.getElementById("scroller");
  if (!scroller || natural.width === 0 || natural.height === 0) return 1;
  // Fitted to the visible area, never enlarged: a small graph stays at 100%.
  return Math.max(ZOOM_MIN, Math.min(1, (scroller.clientWidth - 8) / natural.width, (scroller.clientHeight - 8) / natural.height));
}

function setZoom(next: "fit" | number): void {
  zoom = next === "fit" ? "fit" : Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, next));
  applyZoom();
}

/** Scales the canvas (CSSOM transform: the CSP refuses style attributes) inside a stage sized to the result, so scrolling covers it exactly. */
function applyZoom(): void {
  const canvas = document.getElementById("canvas");
  const stage = document.getElementById("stage");
  if (!canvas || !stage) return;
  const s = scale();
  canvas.style.transform = `scale(${s})`;
  stage.style.width = `${Math.ceil(natural.width * s)}px`;
  stage.style.height = `${Math.ceil(natural.height * s)}px`;
  const level = document.getElementById("zoom-level");
  if (level) level.textContent = `${Math.round(s * 100)}%${zoom === "fit" ? " (fit)" : ""}`;
  document.body.dataset.zoom = s.toFixed(3);
}

// A fitted graph follows the visible area's size (an editor group resized, the key table laid out under it).
const resized = new ResizeObserver(() => {
  if (zoom === "fit") applyZoom();
});

document.addEventListener(
  "wheel",
  (e) => {
    if (!e.ctrlKey || !document.getElementById("canvas")) return;
    e.preventDefault();
    setZoom(scale() * (e.deltaY < 0 ? 1.1 : 1 / 1.1));
  },
  { passive: false },
);

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || !document.getElementById("canvas")) return;
  if (e.key === "+" || e.key === "=") setZoom(scale() * 1.25);
  else if (e.key === "-") setZoom(scale() / 1.25);
  else if (e.key === "0") setZoom("fit");
  else return;
  e.preventDefault();
});

function executorNode(ex: GraphExecutorView, isStart: boolean): HTMLElement {
  const kind = KIND[ex.kind];
  const node = el(
    "button",
    {
      className: `node kind-${ex.kind}${isStart ? " start" : ""}`,
      title: `${ex.description ?? ex.id}\nClick to reveal its code`,
      data: { executor: ex.id, kind: ex.kind },
      onclick: () => host.post({ type: "revealExecutor", executor: ex.id }),
    },
    [
      el("div", { className: "node-head" }, [
        el("span", { className: `codicon codicon-${kind.icon}`, ariaLabel: kind.label }),
        el("span", { className: "node-name" }, ex.id),
        el("span", { className: "node-kind" }, isStart ? `${kind.label} · start` : kind.label),
      ]),
    ],
  );
  if (ex.owns.length)
    node.append(el("div", { className: "node-owns" }, [el("span", { className: "codicon codicon-key" }), `owns ${ex.owns.join(", ")}`]));
  if (ex.reads.length) node.append(el("div", { className: "node-reads" }, `reads ${ex.reads.join(", ")}`));
  return node;
}

function keyTable(m: GraphViewModel): HTMLElement {
  const rows = m.keys.map((k) => {
    // data-key is the state key here (read by the tests), not a patch key: this panel is drawn whole.
    return el("tr", { data: { key: k.key } }, [
      el("td", { className: "key" }, k.key),
      el("td", {}, k.fact ? "fact" : k.extractOf ? "extract" : "state"),
      el(
        "td",
        { className: k.owner || k.extractOf ? "owner" : "owner none" },
        k.owner ?? (k.extractOf ? `the engine, from ${k.extractOf}` : "no owner (input only)"),
      ),
    ]);
  });
  return el("aside", { className: "keys" }, [
    el("h2", {}, "State keys"),
    el("table", {}, [
      el("thead", {}, [el("tr", {}, [el("th", {}, "Key"), el("th", {}, "Kind"), el("th", {}, "Owner")])]),
      el("tbody", {}, rows),
    ]),
  ]);
}

function legend(): HTMLElement {
  return el("aside", { className: "legend" }, [
    ...Object.entries(KIND).map(([k, v]) =>
      el("span", { className: `legend-item kind-${k}` }, [el("span", { className: `codicon codicon-${v.icon}` }), v.label]),
    ),
    el("span", { className: "legend-item" }, [el("span", { className: "legend-dash" }), "conditional edge"]),
  ]);
}

function showLive(live: GraphLive | null): void {
  const running = new Set(live?.executors ?? []);
  for (const node of document.querySelectorAll<HTMLElement>(".node")) {
    const on = running.has(node.dataset.executor ?? "");
    node.classList.toggle("running", on);
    if (on) node.setAttribute("aria-current", "step");
    else node.removeAttribute("aria-current");
  }
  const status = document.getElementById("live");
  if (!status) return;
  if (!live) {
    status.textContent = "No run in progress";
    status.className = "live idle";
    return;
  }
  const who = live.executors.length ? live.executors.join(", ") : "nothing (the run has finished)";
  status.textContent =
    live.source === "runner"
      ? `Superstep ${live.superstep} running: ${who}`
      : `Latest checkpoint (superstep ${live.superstep}) of run ${live.runId}: pending ${who}`;
  status.className = `live ${live.source}`;
}

function showNotice(level: "info" | "warning" | "error", text: string): void {
  const n = document.getElementById("notice");
  if (!n) {
    app.replaceChildren(el("p", { className: `notice-standalone ${level}` }, text));
    return;
  }
  n.textContent = text;
  n.className = `notice visible ${level}`;
}

app.replaceChildren(el("p", { className: "loading" }, "Loading the workflow…"));
host.post({ type: "ready" });
