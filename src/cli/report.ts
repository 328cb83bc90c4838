import { RunControl } from "../engine/control";
import { CasefileError } from "../engine/errors";
import type { EventRecord } from "../engine/records";
import type { Io } from "./args";

/**
 * Whether CASEFILE_EVENTS asks for every event on stdout: `jsonl`, the one format; unset or empty
 * for none. Any other value is refused before anything runs, rather than silently printing nothing.
 */
export function eventsAsJsonl(io: Io): boolean {
  const v = io.env.CASEFILE_EVENTS;
  if (v === undefined || v === "") return false;
  if (v === "jsonl") return true;
  throw new CasefileError("USAGE", `CASEFILE_EVENTS=${JSON.stringify(v)}: the one format is jsonl (unset it to print no events)`);
}

/**
 * How a CLI command that runs the engine reports while it runs: log lines and warnings to stderr,
 * and with CASEFILE_EVENTS=jsonl every event as one JSON line on stdout. Used by run, resume,
 * respond and replay.
 *
 * The engine logs a warning when it finds it and reports it again as a warning event once the
 * superstep that carries it is durable; other warning events (a stale extract) are never logged.
 * Each warning is printed once: an event whose warning was logged is not printed again.
 * `control` is the run's: it stops the run at its next superstep boundary once `io.closed` aborts.
 */
export function reporter(io: Io): { log: (message: string) => void; onEvent: (event: EventRecord) => void; control: RunControl } {
  const logged: string[] = [];
  const jsonl = eventsAsJsonl(io);
  // Nobody reads the output any more: the superstep under way finishes on the record, then the
  // run stops (`stopped`, resumable), rather than running on unseen or dying half-way.
  const control = new RunControl();
  if (io.closed?.aborted) control.stopAfterSuperstep();
  else io.closed?.addEventListener("abort", () => control.stopAfterSuperstep(), { once: true });
  return {
    control,
    log: (m) => {
      if (m.startsWith("warning: ")) logged.push(m.slice("warning: ".length));
      io.err(m);
    },
    onEvent: (e) => {
      if (e.type === "warning") {
        const message = String((e.data as { message?: unknown }).message);
        const i = logged.indexOf(message);
        if (i >= 0) logged.splice(i, 1);
        else io.err(`warning: ${message}`);
      }
      // A checkpoint event is printed only once durable, which is what the kill test compares the file with.
      if (jsonl) io.out(JSON.stringify(e));
    },
  };
}

/**
 * Ctrl-C (SIGINT) or SIGTERM while run, resume, respond or replay runs: the first stops the run
 * (`control`, the reporter's) at the end of the superstep in progress, so it ends `stopped` on the
 * record and the case file is compacted as after any other ending; a second exits at once (the run
 * is then as if killed: its last supersteps in the journal). The function returned removes the
 * handlers when the command ends.
 */
export function stopOnInterrupt(io: Io, control: RunControl): () => void {
  let asked = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (asked) process.exit(signal === "SIGINT" ? 130 : 143);
    asked = true;
    io.err(`casefile: ${signal}: stopping the run at the end of this superstep (again to quit now)`);
    control.stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
}
