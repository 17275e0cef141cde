// Mitrity guard for OpenCode, rendered by `mitrity-hook render-opencode-plugin`.
// Do not edit it: render it again.
//
// Before every bash call it runs `mitrity-hook opencode` with the call as one
// JSON object on stdin and follows the answer on stdout:
//   {"decision":"deny","reason":...}  throws: the call does not run, the
//                                     reason goes to the model;
//   {"decision":"allow","args":{...}} replaces output.args.command with
//                                     args.command (the relay);
//   {"decision":"allow"|"defer"}      lets the call run as it is.
// Everything else throws, so the call does not run: the hook missing, killed,
// silent past the timeout, exiting with anything but 0, or answering what this
// file does not understand.
//
// It serves OpenCode 1 up to 1.3.3 (every export is called: MitrityPlugin),
// from 1.3.4 (default export {id, server}) and OpenCode 2 (default export
// {id, setup}, hook "execute.before"). node:child_process works under Bun
// (OpenCode 1) and Node (OpenCode 2).
import { spawn } from "node:child_process";

const HOOK = "__MITRITY_HOOK_PATH__";
const PROTOCOL = __MITRITY_PROTOCOL__;
const TIMEOUT_MS = __MITRITY_TIMEOUT_MS__;
const MAX_ANSWER = 1048576;
const SHELL_TOOLS = new Set(["bash", "shell"]);

function runHook(request) {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(HOOK, ["opencode"], { stdio: ["pipe", "pipe", "pipe"], env: process.env });
    } catch (err) {
      reject(new Error(`Mitrity could not start ${HOOK} (${err && err.message}), so the call is blocked.`));
      return;
    }
    const out = [];
    const errs = [];
    let outLen = 0;
    let errLen = 0;
    let settled = false;
    let timer;
    const finish = (fn, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn(value);
    };
    timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish(reject, new Error(`Mitrity got no answer from ${HOOK} within ${TIMEOUT_MS / 1000} s, so the call is blocked.`));
    }, TIMEOUT_MS);
    child.stdout.on("data", (chunk) => {
      outLen += chunk.length;
      if (outLen > MAX_ANSWER) {
        child.kill("SIGKILL");
        finish(reject, new Error(`Mitrity got an oversized answer from ${HOOK}, so the call is blocked.`));
        return;
      }
      out.push(chunk);
    });
    child.stderr.on("data", (chunk) => {
      if (errLen < MAX_ANSWER) {
        errLen += chunk.length;
        errs.push(chunk);
      }
    });
    child.on("error", (err) => {
      finish(reject, new Error(`Mitrity could not run ${HOOK} (${err && err.message}), so the call is blocked.`));
    });
    child.on("close", (code, signal) => {
      finish(resolve, {
        code,
        signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(errs).toString("utf8").trim(),
      });
    });
    // A hook that exits before reading all of stdin closes the pipe; its exit
    // status decides, not the write error.
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(request));
  });
}

function parseAnswer(text) {
  try {
    const answer = JSON.parse(text);
    return answer !== null && typeof answer === "object" && !Array.isArray(answer) ? answer : undefined;
  } catch {
    return undefined;
  }
}

// guard returns the command to run instead of the model's, or undefined to
// run the call unchanged; it throws to block the call.
async function guard(tool, sessionID, callID, directory, args) {
  const res = await runHook({
    version: PROTOCOL,
    tool,
    sessionID,
    callID,
    directory,
    args: args === undefined ? null : args,
  });
  const answer = parseAnswer(res.stdout);
  if (res.code === 2) {
    throw new Error(res.stderr || (answer && answer.reason) || "Mitrity blocked this call.");
  }
  if (res.code !== 0) {
    const how = res.signal ? `was killed by ${res.signal}` : `exited with ${res.code}`;
    throw new Error(`Mitrity could not check this call (${HOOK} ${how}${res.stderr ? ": " + res.stderr : ""}), so it is blocked.`);
  }
  if (!answer) {
    throw new Error(`Mitrity got an unreadable answer from ${HOOK}, so the call is blocked.`);
  }
  switch (answer.decision) {
    case "deny":
      throw new Error(typeof answer.reason === "string" && answer.reason ? answer.reason : "Mitrity denied this call.");
    case "defer":
      return undefined;
    case "allow":
      if (answer.args === undefined) return undefined;
      if (answer.args !== null && typeof answer.args === "object" && typeof answer.args.command === "string" && answer.args.command !== "") {
        return answer.args.command;
      }
      throw new Error(`Mitrity got a rewrite without a command from ${HOOK}, so the call is blocked.`);
    default:
      throw new Error(`Mitrity got an answer it does not understand from ${HOOK}, so the call is blocked.`);
  }
}

// The model's own commands of the calls rewritten to the relay, by callID,
// until the call ends: OpenCode keeps the relay line as the call's input,
// so "tool.execute.after" puts the model's command back in the title.
const rewritten = new Map();
const MAX_REWRITTEN = 4096;

// OpenCode 1: "tool.execute.before"(input {tool, sessionID, callID}, output {args});
// "tool.execute.after"(input, output {title, output, metadata}).
export const MitrityPlugin = async (ctx) => {
  const directory = (ctx && (ctx.directory || ctx.worktree)) || process.cwd();
  return {
    "tool.execute.before": async (input, output) => {
      const tool = input && input.tool;
      if (!SHELL_TOOLS.has(tool)) return;
      const original = output && output.args ? output.args.command : undefined;
      const command = await guard(tool, input.sessionID, input.callID, directory, output ? output.args : undefined);
      if (command !== undefined) {
        output.args.command = command;
        if (typeof original === "string" && input.callID !== undefined && rewritten.size < MAX_REWRITTEN) {
          rewritten.set(input.callID, original);
        }
      }
    },
    "tool.execute.after": async (input, output) => {
      const tool = input && input.tool;
      if (!SHELL_TOOLS.has(tool) || !output) return;
      const original = rewritten.get(input.callID);
      rewritten.delete(input.callID);
      if (original !== undefined) output.title = original;
      // OpenCode shows its model the output of a bash call but not its exit
      // code; every other framework does.
      const exit = output.metadata && output.metadata.exit;
      if (Number.isInteger(exit) && typeof output.output === "string") {
        output.output += `${output.output === "" || output.output.endsWith("\n") ? "" : "\n"}[exit code ${exit}]`;
      }
    },
  };
};

// OpenCode 2: ctx.tool.hook("execute.before", event {tool, sessionID, callID, input}).
async function setup(ctx) {
  const location = ctx && ctx.location;
  const directory = (location && (location.directory || location.worktree)) || process.cwd();
  await ctx.tool.hook("execute.before", async (event) => {
    const tool = event && event.tool;
    if (!SHELL_TOOLS.has(tool)) return;
    const command = await guard(tool, event.sessionID, event.callID, directory, event.input);
    if (command !== undefined) event.input.command = command;
  });
}

export default { id: "mitrity", server: MitrityPlugin, setup };
