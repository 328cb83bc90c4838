import { z } from "zod";

/**
 * The arguments of the DAP requests the Casefile debug adapter answers, as any DAP client may
 * send them (VS Code, nvim-dap, a script on `casefile dap`'s stdin). The session
 * (src/debug/session.ts) parses every request's arguments here before it is dispatched: a request
 * with arguments of the wrong shape is answered with an error response naming the argument,
 * never a stack, and the session goes on. Unknown fields pass (clients add their own); the
 * launch configuration's own attributes are LaunchArgumentsSchema's (debug.ts).
 */

const int = z.number().int();
const threadArgs = z.object({ threadId: int }).passthrough();
const optional = z.object({}).passthrough().optional();

const spec = z.object({ condition: z.string().optional(), hitCondition: z.string().optional() }).passthrough();

export const DAP_REQUEST_ARGUMENTS: Record<string, z.ZodType> = {
  initialize: z
    .object({
      adapterID: z.string().optional(),
      linesStartAt1: z.boolean().optional(),
      columnsStartAt1: z.boolean().optional(),
      pathFormat: z.string().optional(),
    })
    .passthrough(),
  launch: z.object({}).passthrough(),
  configurationDone: optional,
  setBreakpoints: z
    .object({
      source: z.object({ path: z.string().optional(), name: z.string().optional() }).passthrough(),
      breakpoints: z.array(spec.extend({ line: int, column: int.optional(), logMessage: z.string().optional() })).optional(),
      lines: z.array(int).optional(),
    })
    .passthrough(),
  setFunctionBreakpoints: z.object({ breakpoints: z.array(spec.extend({ name: z.string() })) }).passthrough(),
  setExceptionBreakpoints: z
    .object({ filters: z.array(z.string()), filterOptions: z.array(z.object({ filterId: z.string() }).passthrough()).optional() })
    .passthrough(),
  threads: optional,
  stackTrace: threadArgs.extend({ startFrame: int.min(0).optional(), levels: int.min(0).optional() }),
  scopes: z.object({ frameId: int }).passthrough(),
  variables: z.object({ variablesReference: int, start: int.min(0).optional(), count: int.min(0).optional() }).passthrough(),
  setVariable: z.object({ variablesReference: int, name: z.string(), value: z.string() }).passthrough(),
  evaluate: z.object({ expression: z.string(), frameId: int.optional(), context: z.string().optional() }).passthrough(),
  exceptionInfo: threadArgs,
  continue: threadArgs,
  next: threadArgs,
  stepIn: threadArgs,
  stepOut: threadArgs,
  stepBack: threadArgs,
  reverseContinue: threadArgs,
  pause: threadArgs,
  restartFrame: z.object({ frameId: int }).passthrough(),
  restart: optional,
  terminate: optional,
  disconnect: optional,
};

/** What is wrong with a request's arguments, in a line naming the argument; undefined when they parse (or the command is not one of these). */
export function dapRequestProblem(request: { command?: unknown; arguments?: unknown }): string | undefined {
  if (typeof request.command !== "string") return "a request needs a command (a string)";
  const schema = DAP_REQUEST_ARGUMENTS[request.command];
  if (!schema) return undefined;
  const parsed = schema.safeParse(request.arguments);
  if (parsed.success) return undefined;
  const issue = parsed.error.issues[0]!;
  const at = issue.path.length ? `argument "${issue.path.join(".")}"` : "its arguments";
  return `${request.command}: ${at}: ${issue.message}`;
}
