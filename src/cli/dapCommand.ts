import { parseOptions, type Command } from "./args";

/** `casefile dap`: DAP on stdin/stdout, the debug adapter the extension runs inline, for any DAP client. */
export const dap: Command = async (args, io) => {
  parseOptions(args, {}, 0);
  const { serveStdio } = await import("../debug/debugAdapter.js");
  return serveStdio({ env: io.env });
};
