import assert from "node:assert/strict";
import { runEntrypoint } from "./entrypoint.ts";
import type { LogLevel } from "./log.ts";

interface Options {
  logLevel: LogLevel;
}

function harness(run: (options: Options) => Promise<number>) {
  const out: string[] = [];
  const err: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const entry = (args: string[]) =>
    runEntrypoint(args, {
      name: "thing",
      summary: "Does a thing.",
      flags: [{ name: "log-level", default: "info", help: "level" }],
      parse(argv) {
        if (argv.includes("--help")) return { help: true };
        if (argv.includes("--bad")) throw new TypeError("Cannot parse --bad");
        return { help: false, options: { logLevel: "info" } };
      },
      run,
    }, {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      write: (line) => lines.push(JSON.parse(line)),
    });
  return { entry, out, err, lines };
}

Deno.test("runEntrypoint() prints --help and exits 0 without running", async () => {
  let ran = false;
  const h = harness(() => {
    ran = true;
    return Promise.resolve(0);
  });
  assert.equal(await h.entry(["--help"]), 0);
  assert.equal(ran, false);
  assert.match(h.out.join(""), /^Usage: thing \[flags\]\n\nDoes a thing\./);
  assert.match(h.out.join(""), /--log-level=<value>/);
});

Deno.test("runEntrypoint() exits 2 on a flag error, naming the program", async () => {
  const h = harness(() => Promise.resolve(0));
  assert.equal(await h.entry(["--bad"]), 2);
  assert.deepEqual(h.err, ["thing: Cannot parse --bad"]);
});

Deno.test("runEntrypoint() returns run's exit code", async () => {
  const h = harness(() => Promise.resolve(0));
  assert.equal(await h.entry([]), 0);
  assert.deepEqual(h.lines, []);
});

Deno.test("runEntrypoint() turns a startup failure into one 'cannot start' log line and exit 1", async () => {
  const h = harness(() => Promise.reject(new Error("kubeconfig unreadable")));
  assert.equal(await h.entry([]), 1);
  assert.equal(h.lines.length, 1);
  const line = h.lines[0]!;
  assert.equal(line.level, "error");
  assert.equal(line.msg, "cannot start");
  assert.equal(line.component, "thing");
  assert.match(JSON.stringify(line.error), /kubeconfig unreadable/);
});
