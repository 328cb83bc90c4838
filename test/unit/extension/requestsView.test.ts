import * as assert from "node:assert/strict";
import { MemoryStore } from "../../../src/casefile/index";
import { Engine } from "../../../src/engine/engine";
import { defineWorkflow, request, z } from "../../../src/engine/index";
import { buildSuperstepDetail } from "../../../src/extension/viewModel";

/**
 * The requests a superstep's details carry for the Run Inspector's request card, from a real run
 * that waits for a person (engine and store, no mocks): the prompt while it waits, then who
 * answered, what and when in the superstep the answer arrived.
 */

const workflow = defineWorkflow({
  name: "payment",
  version: 1,
  state: { decision: z.string() },
  executors: {
    ask: request({
      owns: ["decision"],
      prompt: () => ({ title: "Pay 1,240.00 EUR to ACME?", options: ["approve", "reject"] }),
      onAnswer: (a, ctx) => ctx.write("decision", a.decision),
    }),
  },
  edges: [],
  start: "ask",
});

describe("Inspector view model: a person's requests", () => {
  it("shows the waiting request where it was asked, then who answered, what and when where the answer arrived", async () => {
    const store = new MemoryStore();
    const r = await new Engine(workflow, store).run();
    const asked = store.latestCheckpoint(r.runId)!;
    const [waiting] = buildSuperstepDetail(store, r.runId, asked.superstep).requests;
    assert.equal(waiting?.status, "waiting", "the request waits in the superstep that asked it");
    assert.deepEqual(waiting?.prompt, { title: "Pay 1,240.00 EUR to ACME?", detail: null, options: ["approve", "reject"] });
    assert.equal(waiting?.answer, null, "nothing answered yet");

    await new Engine(workflow, store).respond(waiting!.id, { decision: "approve", comment: "ok" }, { by: "dana" });
    const [before] = buildSuperstepDetail(store, r.runId, asked.superstep).requests;
    assert.equal(before?.status, "answered", "the superstep that asked now shows it answered");
    const arrived = before!.answer!;
    assert.equal(arrived.by, "dana", "who answered");
    assert.deepEqual(arrived.value, { decision: "approve", comment: "ok" }, "what they answered");
    assert.ok(arrived.superstep > asked.superstep, "the answer arrived in a later superstep");
    const [there] = buildSuperstepDetail(store, r.runId, arrived.superstep).requests;
    assert.equal(there?.id, waiting!.id, "the superstep where the answer arrived shows the request too");
    assert.equal(there?.answer?.at, arrived.at, "with when it was answered");
    assert.deepEqual(buildSuperstepDetail(store, r.runId, 0).requests, [], "a superstep with no request carries none");
  });
});
