/**
 * Pause, step, continue and stop, obeyed at superstep boundaries. The runner calls the verbs
 * when the host asks; the engine awaits `gate()` before every superstep.
 */
export class RunControl {
  private mode: "run" | "paused" | "step";
  private stopped = false;
  private wake: (() => void) | undefined;
  private readonly abort = new AbortController();

  constructor(stepMode = false) {
    this.mode = stepMode ? "paused" : "run";
  }

  /** Aborted when stop is asked: long-running executors may listen to it. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  pause(): void {
    if (this.mode === "run") this.mode = "paused";
  }

  /** Runs exactly one more superstep, then pauses again. */
  step(): void {
    this.mode = "step";
    this.release();
  }

  continue(): void {
    this.mode = "run";
    this.release();
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
    this.release();
  }

  /**
   * Stops at the next superstep boundary without aborting what runs now: the superstep under way
   * finishes and is committed, then the run ends `stopped`. The CLI calls it when nobody reads its
   * output any more (a pipe closed early), where a model call already paid for should be kept.
   */
  stopAfterSuperstep(): void {
    this.stopped = true;
    this.release();
  }

  /**
   * Called by the engine before each superstep: resolves true to run it, false to stop.
   * `onPause` is called each time the run comes to rest, so the host can show it.
   */
  async gate(onPause: () => void): Promise<boolean> {
    for (;;) {
      if (this.stopped) return false;
      if (this.mode === "run") return true;
      if (this.mode === "step") {
        this.mode = "paused";
        return true;
      }
      onPause();
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private release(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
