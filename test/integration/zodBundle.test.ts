import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { root } from "./helpers";

/**
 * zod as every process of ours loads it, dist/ext-zod.js (npm run build): its 60-odd languages of
 * error messages are a bundle of their own (esbuild.mjs, zodLocalesPlugin), required the first
 * time a workflow or our code asks for one. A workflow that sets a locale must still get it.
 */
describe("zod's bundle in dist/", () => {
  it("loads no locale but English until one is asked for, and then gives that language's messages", () => {
    const script = `
      const zod = require(${JSON.stringify(path.join(root, "dist/ext-zod.js"))});
      const { z } = zod;
      const loaded = () => Object.keys(require.cache).map((k) => path.basename(k)).filter((k) => k !== "[eval]");
      const message = () => z.object({ total: z.number() }).safeParse({ total: "12" }).error.issues[0].message;
      const before = { loaded: loaded(), message: message() };
      const names = Object.keys(z.locales);
      z.config(z.locales.de());
      console.log(JSON.stringify({ before, names, core: typeof zod.core.locales.fr, german: message(), after: loaded() }));`;
    const out = execFileSync(process.execPath, ["-e", `const path = require("node:path");${script}`], { encoding: "utf8" });
    const r = JSON.parse(out) as {
      before: { loaded: string[]; message: string };
      names: string[];
      core: string;
      german: string;
      after: string[];
    };
    assert.deepEqual(r.before.loaded, ["ext-zod.js"], "zod alone is loaded at first");
    assert.equal(r.before.message, "Invalid input: expected number, received string", "English messages without the locales");
    assert.ok(
      r.names.includes("de") && r.names.includes("fr") && r.names.length > 40,
      `z.locales lists the languages: ${r.names.join(", ")}`,
    );
    assert.equal(r.core, "function", "z.core.locales too");
    assert.match(r.german, /Ungültige Eingabe/, `the German message after z.config(z.locales.de()): ${r.german}`);
    assert.deepEqual(r.after, ["ext-zod.js", "vendor-zod-locales.js"], "the locales bundle loaded when asked for");
  });
});
