import type { EventRecord, Json } from "../../engine/records";
import type { CaseStore } from "../../engine/store";
import type { RequestView } from "../../protocol/webview";

/**
 * The person's requests one superstep shows: those its request steps asked (with their prompt, and
 * whether they still wait) and those whose answer arrived in it (who answered, what, when). Read
 * from the case file's events (`request_waiting`, `request_answered`) and the run's latest
 * checkpoint; called by buildSuperstepDetail when the person selects the superstep.
 */
export function requestsView(store: CaseStore, runId: string, superstep: number): RequestView[] {
  // A click on a superstep with no request (most) reads only that superstep's events: the whole
  // log, to pair a request with its answer across runs, only where there is a request to show.
  const mentions = (e: EventRecord): boolean => e.type === "request_waiting" || e.type === "request_answered";
  if (!store.listEvents({ runId, superstep }).some(mentions)) return [];
  const events = store.listEvents();
  const asked = new Map<string, EventRecord>();
  const answered = new Map<string, EventRecord>();
  for (const e of events) {
    const d = e.data as { request?: unknown; requestId?: unknown; run?: unknown };
    if (e.type === "request_waiting" && typeof d.request === "string") asked.set(d.request, e);
    // The answering run's own event (a branch that took its parent's request records one for each).
    if (e.type === "request_answered" && typeof d.requestId === "string" && (d.run === e.runId || !answered.has(d.requestId)))
      answered.set(d.requestId, e);
  }
  const here = new Set<string>();
  for (const [id, e] of asked) if (e.runId === runId && e.superstep === superstep) here.add(id);
  for (const [id, e] of answered) if (e.runId === runId && e.superstep === superstep) here.add(id);
  if (here.size === 0) return [];
  const run = store.getRun(runId);
  const waitingNow = new Set(run?.status === "waiting" ? (store.latestCheckpoint(runId)?.waiting.map((w) => w.id) ?? []) : []);
  return [...here].map((id) => {
    const a = asked.get(id);
    const ans = answered.get(id);
    const d = (a?.data ?? {}) as { executor?: unknown; prompt?: { title?: unknown; detail?: unknown; options?: unknown } };
    const ad = (ans?.data ?? {}) as { executor?: unknown; answer?: Json; by?: unknown };
    const options = Array.isArray(d.prompt?.options) ? d.prompt.options.filter((o): o is string => typeof o === "string") : [];
    return {
      id,
      executor: String(d.executor ?? ad.executor ?? id.split(":").at(-1) ?? ""),
      askedIn: { runId: a?.runId ?? runId, superstep: a?.superstep ?? superstep },
      askedAt: a?.at ?? "",
      prompt: {
        title: typeof d.prompt?.title === "string" ? d.prompt.title : "(the prompt was recorded in another case file)",
        detail: typeof d.prompt?.detail === "string" ? d.prompt.detail : null,
        options,
      },
      status: ans ? "answered" : waitingNow.has(id) ? "waiting" : "closed",
      answer: ans
        ? {
            value: ad.answer ?? null,
            by: typeof ad.by === "string" && ad.by ? ad.by : null,
            at: ans.at,
            runId: ans.runId,
            superstep: ans.superstep,
          }
        : null,
    };
  });
}
