/**
 * The graphs the peer benchmark runs, each written twice: once as a Casefile workflow, once as a
 * LangGraph.js StateGraph with the same nodes, the same state keys and the same edges, so that
 * a scenario times the two runtimes doing the same work. Executors do nothing but the trivial
 * state update each scenario needs: what is measured is the runtime around them.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { z } from "zod";
import { code, edge, fact, loader } from "../../../src/engine/executors";
import type { Json } from "../../../src/engine/records";
import { defineWorkflow } from "../../../src/engine/workflow";
import type { Workflow } from "../../../src/engine/workflow";

/**
 * What the scenarios need of a compiled LangGraph graph. The StateGraph generics make each
 * compiled graph a different type; the benchmark only invokes them, so one loose shape serves.
 */
export interface TheirGraph {
  invoke(input: unknown, config: Record<string, unknown>): Promise<Record<string, unknown>>;
}

function compiled(graph: { compile(opts: { checkpointer: BaseCheckpointSaver }): unknown }, saver: BaseCheckpointSaver): TheirGraph {
  return graph.compile({ checkpointer: saver }) as TheirGraph;
}

// ---- 1. engine overhead: two executors handing a message back and forth

/**
 * `ping` and `pong` alternate, one per superstep, each incrementing its own counter; `pong`
 * stops the loop once its counter reaches the input's limit. A run of limit L makes 2L supersteps.
 */
export function pingPongWorkflow(): Workflow {
  return defineWorkflow({
    name: "bench-pingpong",
    version: 1,
    state: { a: z.number().int(), b: z.number().int() },
    input: z.object({ limit: z.number().int() }),
    executors: {
      ping: code({
        owns: ["a"],
        run: (ctx) => {
          ctx.write("a", (ctx.state.a ?? 0) + 1);
          return ctx.message;
        },
      }),
      pong: code({
        owns: ["b"],
        run: (ctx) => {
          const b = (ctx.state.b ?? 0) + 1;
          ctx.write("b", b);
          return b < (ctx.message as { limit: number }).limit ? ctx.message : undefined;
        },
      }),
    },
    edges: [edge("ping", "pong"), edge("pong", "ping")],
    start: "ping",
  });
}

const PingPongState = Annotation.Root({ a: Annotation<number>(), b: Annotation<number>(), limit: Annotation<number>() });

export function pingPongGraph(saver: BaseCheckpointSaver): TheirGraph {
  const g = new StateGraph(PingPongState)
    .addNode("ping", (s) => ({ a: (s.a ?? 0) + 1 }))
    .addNode("pong", (s) => ({ b: (s.b ?? 0) + 1 }))
    .addEdge(START, "ping")
    .addEdge("ping", "pong")
    .addConditionalEdges("pong", (s) => ((s.b ?? 0) < s.limit ? "ping" : END), ["ping", END]);
  return compiled(g, saver);
}

// ---- 2. checkpoint growth: large facts loaded once, one counter changing every superstep

const Line = z.object({ id: z.string(), supplier: z.string(), description: z.string(), amount: z.number() });
type Line = z.infer<typeof Line>;

/** About `bytes` of invoice lines (JSON length), the same every call. */
export function invoiceLines(bytes: number): Line[] {
  const lines: Line[] = [];
  let size = 2;
  let seed = 7;
  const words = ["invoice", "supplier", "net", "amount", "EUR", "order", "line", "due", "freight", "discount", "tax", "item"];
  while (size < bytes) {
    const i = lines.length;
    const parts: string[] = [];
    while (parts.join(" ").length < 900) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      parts.push(words[seed % words.length]! + (seed % 1000));
    }
    const line: Line = { id: `L${i}`, supplier: `S${i % 17}`, description: parts.join(" "), amount: (seed % 100000) / 100 };
    lines.push(line);
    size += JSON.stringify(line).length + 1;
  }
  return lines;
}

/**
 * `load` writes the facts (as facts of record, with provenance) in superstep 1; then `tick`
 * increments `counter` once per superstep until it reaches the input's limit.
 */
export function growthWorkflow(lines: Line[]): Workflow {
  return defineWorkflow({
    name: "bench-growth",
    version: 1,
    state: { facts: fact(z.array(Line)), counter: z.number().int() },
    input: z.object({ limit: z.number().int() }),
    executors: {
      load: loader({
        owns: ["facts"],
        run: (ctx) => {
          ctx.fact("facts", lines as unknown as Json, { source: "erp", sourceVersion: "v1" });
          return ctx.message;
        },
      }),
      tick: code({
        owns: ["counter"],
        reads: ["facts"],
        run: (ctx) => {
          const counter = (ctx.state.counter ?? 0) + 1;
          ctx.write("counter", counter);
          return counter < (ctx.message as { limit: number }).limit ? ctx.message : undefined;
        },
      }),
    },
    edges: [edge("load", "tick"), edge("tick", "tick")],
    start: "load",
  });
}

const GrowthState = Annotation.Root({ facts: Annotation<Line[]>(), counter: Annotation<number>(), limit: Annotation<number>() });

export function growthGraph(saver: BaseCheckpointSaver, lines: Line[]): TheirGraph {
  const g = new StateGraph(GrowthState)
    .addNode("load", () => ({ facts: lines }))
    .addNode("tick", (s) => ({ counter: (s.counter ?? 0) + 1 }))
    .addEdge(START, "load")
    .addEdge("load", "tick")
    .addConditionalEdges("tick", (s) => ((s.counter ?? 0) < s.limit ? "tick" : END), ["tick", END]);
  return compiled(g, saver);
}

// ---- 3. resume: a long loop whose every superstep is trivial

/** `tick` increments `n` and sends itself the message again until `n` reaches the limit. */
export function tickWorkflow(): Workflow {
  return defineWorkflow({
    name: "bench-tick",
    version: 1,
    state: { n: z.number().int() },
    input: z.object({ limit: z.number().int() }),
    executors: {
      tick: code({
        owns: ["n"],
        run: (ctx) => {
          const n = (ctx.state.n ?? 0) + 1;
          ctx.write("n", n);
          return n < (ctx.message as { limit: number }).limit ? ctx.message : undefined;
        },
      }),
    },
    edges: [edge("tick", "tick")],
    start: "tick",
  });
}

const TickState = Annotation.Root({ n: Annotation<number>(), limit: Annotation<number>() });

export function tickGraph(saver: BaseCheckpointSaver): TheirGraph {
  const g = new StateGraph(TickState)
    .addNode("tick", (s) => ({ n: (s.n ?? 0) + 1 }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (s) => ((s.n ?? 0) < s.limit ? "tick" : END), ["tick", END]);
  return compiled(g, saver);
}

// ---- 4. open: large values, to grow a case file to a given size

/** A string of `bytes` letters and digits that differs from every other call's (no JSON escaping). */
export function bigText(bytes: number, salt: number): string {
  const head = `doc-${salt}-`;
  let s = head;
  let seed = salt + 1;
  const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const chunk: string[] = [];
  for (let i = 0; i < 4096; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    chunk.push(alphabet[seed % alphabet.length]!);
  }
  const block = chunk.join("");
  while (s.length < bytes) s += block;
  return s.slice(0, bytes);
}

/** `write` stores a new document of the message's size in `doc` every superstep, `count` times. */
export function docWorkflow(): Workflow {
  return defineWorkflow({
    name: "bench-doc",
    version: 1,
    state: { doc: z.string(), n: z.number().int() },
    input: z.object({ count: z.number().int(), size: z.number().int() }),
    executors: {
      write: code({
        owns: ["doc", "n"],
        run: (ctx) => {
          const msg = ctx.message as { count: number; size: number };
          const n = (ctx.state.n ?? 0) + 1;
          ctx.write("n", n);
          ctx.write("doc", bigText(msg.size, ctx.superstep * 7919 + n));
          return n < msg.count ? msg : undefined;
        },
      }),
    },
    edges: [edge("write", "write")],
    start: "write",
  });
}

const DocState = Annotation.Root({
  doc: Annotation<string>(),
  n: Annotation<number>(),
  count: Annotation<number>(),
  size: Annotation<number>(),
});

export function docGraph(saver: BaseCheckpointSaver): TheirGraph {
  const g = new StateGraph(DocState)
    .addNode("write", (s) => ({ n: (s.n ?? 0) + 1, doc: bigText(s.size, (s.n ?? 0) + 1) }))
    .addEdge(START, "write")
    .addConditionalEdges("write", (s) => ((s.n ?? 0) < s.count ? "write" : END), ["write", END]);
  return compiled(g, saver);
}
