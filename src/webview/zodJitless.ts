import { z } from "zod";

/**
 * The panel's CSP allows no eval, so zod must not try to compile its parsers with `new Function`:
 * the attempt alone files a CSP violation in every panel. zod decides when a schema is built, so
 * inspector.ts imports this module before the schemas (src/protocol/webview.ts).
 */
z.config({ jitless: true });
