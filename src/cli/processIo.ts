import type { Io } from "./args";

/** The exit code of a command whose output pipe closed: what a shell reports for a process killed by SIGPIPE. */
export const EXIT_OUTPUT_CLOSED = 128 + 13;

/**
 * The CLI's Io on the process's own streams, made once by cli() (main.ts).
 *
 * A reader that goes away early (`casefile inspect F | head -1`, a pager quit) makes the next
 * write fail with EPIPE, which Node emits on the stream; unhandled, it prints a stack and kills
 * the command wherever it was. A Unix tool ends quietly there instead, and so does this: the
 * error is the end of that stream's output (later lines to it are dropped, nothing is printed
 * about it), `closed` is aborted so a run stops at its next superstep boundary, on the record
 * (report.ts), and `outputClosed()` tells cli() to exit with EXIT_OUTPUT_CLOSED. Any other write
 * error on the two streams (EIO from a vanished terminal) ends their output the same way.
 */
export function processIo(env: NodeJS.ProcessEnv): Io & { closed: AbortSignal; outputClosed: () => boolean } {
  const closed = new AbortController();
  const gone = new Set<NodeJS.WriteStream>();
  const watch = (stream: NodeJS.WriteStream): void => {
    stream.on("error", () => {
      gone.add(stream);
      // Set here too: the error may arrive after the command returned its code (its last line).
      process.exitCode = EXIT_OUTPUT_CLOSED;
      closed.abort();
    });
  };
  watch(process.stdout);
  watch(process.stderr);
  const writer =
    (stream: NodeJS.WriteStream) =>
    (line: string): void => {
      if (gone.has(stream) || stream.destroyed) return;
      stream.write(line + "\n");
    };
  return {
    out: writer(process.stdout),
    err: writer(process.stderr),
    env,
    closed: closed.signal,
    outputClosed: () => closed.signal.aborted,
  };
}
