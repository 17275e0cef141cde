// Loads a rendered Mitrity OpenCode plugin the way an OpenCode loader does and
// calls its hook once; prints {"threw", "message", "args"} as JSON.
//
//   node driver.mjs PLUGIN LOADER TOOL ARGS_JSON
//
// LOADER transcribes the module checks of each OpenCode generation (after
// the dcg project's reading of OpenCode's loaders, see opencode_test.go):
//   v1     OpenCode >= 1.3.4: a default export with an id is a plugin module;
//          it must have server() and a non-empty id; server(input) returns
//          the hooks.
//   legacy OpenCode <= 1.3.3: every export is called as a plugin function;
//          a throw is logged and ends the loop, keeping the hooks before it.
//   v2     OpenCode 2: default export {id, setup(ctx)}; setup registers
//          ctx.tool.hook("execute.before", cb) with event {tool, sessionID,
//          callID, input}.
import { pathToFileURL } from "node:url";

const [pluginPath, loader, tool, argsJSON] = process.argv.slice(2);
const mod = await import(pathToFileURL(pluginPath).href);
const isRecord = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const isFn = (v) => typeof v === "function";
const ctx = { directory: "/home/dev/src/app", worktree: "/home/dev/src/app" };

let before;
if (loader === "v1") {
  const v = mod.default;
  if (!isRecord(v) || !("id" in v || "server" in v)) throw new Error("v1: default export is not a plugin module");
  if (!isFn(v.server)) throw new Error("v1: must default export an object with server()");
  if (typeof v.id !== "string" || !v.id.trim()) throw new Error("v1: Path plugin must export id");
  const hooks = await v.server(ctx, undefined);
  before = (input, output) => hooks["tool.execute.before"](input, output);
} else if (loader === "legacy") {
  const hooks = [];
  const seen = new Set();
  try {
    for (const [, fn] of Object.entries(mod)) {
      if (seen.has(fn)) continue;
      seen.add(fn);
      hooks.push(await fn(ctx));
    }
  } catch {}
  const h = hooks.find((x) => x && isFn(x["tool.execute.before"]));
  if (!h) throw new Error("legacy: no tool.execute.before registered");
  before = (input, output) => h["tool.execute.before"](input, output);
} else if (loader === "v2") {
  const v = mod.default;
  if (!isRecord(v) || typeof v.id !== "string" || !isFn(v.setup)) throw new Error("v2: want default {id, setup}");
  let cb;
  await v.setup({
    location: { directory: ctx.directory, worktree: ctx.worktree },
    tool: {
      hook: async (name, fn) => {
        if (name === "execute.before") cb = fn;
        return { dispose: async () => {} };
      },
    },
  });
  if (!cb) throw new Error("v2: no execute.before registered");
  before = async (input, output) => {
    const event = { tool: input.tool, sessionID: input.sessionID, callID: input.callID, input: output.args };
    await cb(event);
    output.args = event.input;
  };
} else {
  throw new Error(`unknown loader ${loader}`);
}

const output = { args: JSON.parse(argsJSON) };
let result;
try {
  await before({ tool, sessionID: "ses_6a1f3c2e9ffe1Q2w3E4r5T6y7U", callID: "toolu_01HkP3vN8qRtY6uW2xZ5aB7c" }, output);
  result = { threw: false, args: output.args };
} catch (err) {
  result = { threw: true, message: String(err && err.message) };
}
process.stdout.write(JSON.stringify(result));
