import assert from "node:assert/strict";
import { jsonLogLine, spawnWatched, watcherEvent } from "./components.ts";
import { waitFor } from "../../testing/fakes.ts";

const ESC = String.fromCharCode(27);
const at = () => new Date("2025-01-02T03:04:05.000Z");

Deno.test("jsonLogLine() keeps a JSON record and wraps every other line", () => {
  const record = '{"time":"t","level":"debug","msg":"listed","count":3}';
  assert.equal(jsonLogLine(record, { stream: "stderr" }), record);
  assert.equal(
    jsonLogLine(`${ESC}[0m${ESC}[38;5;12mWatcher${ESC}[0m Process started.`, {
      stream: "stderr",
      now: at,
    }),
    '{"time":"2025-01-02T03:04:05.000Z","level":"info","msg":"Process started.","source":"watcher"}',
  );
  assert.equal(
    jsonLogLine("Watcher Process failed. Restarting on file change...", {
      stream: "stderr",
      now: at,
    }),
    '{"time":"2025-01-02T03:04:05.000Z","level":"error","msg":"Process failed. Restarting on file change...","source":"watcher"}',
  );
  assert.equal(
    jsonLogLine("error: Uncaught (in promise) Error: boom", {
      stream: "stderr",
      now: at,
    }),
    '{"time":"2025-01-02T03:04:05.000Z","level":"error","msg":"error: Uncaught (in promise) Error: boom","source":"stderr"}',
  );
  assert.equal(
    JSON.parse(jsonLogLine("Warning: deprecated", { stream: "stderr" })!)
      .level,
    "warn",
  );
  assert.equal(
    jsonLogLine("{not json", { stream: "stdout", now: at }),
    '{"time":"2025-01-02T03:04:05.000Z","level":"info","msg":"{not json","source":"stdout"}',
  );
  assert.equal(jsonLogLine("  ", { stream: "stdout" }), undefined);
});

Deno.test("watcherEvent() reads a run's start, end and restart from the log lines", () => {
  const line = (msg: string, source = "watcher") =>
    JSON.stringify({ level: "info", msg, source });
  assert.deepEqual(watcherEvent(line("Process started.")), { kind: "started" });
  assert.deepEqual(
    watcherEvent(line("Process finished. Restarting on file change...")),
    { kind: "ended" },
  );
  assert.deepEqual(
    watcherEvent(line('Restarting! File change detected: "/src/lib/a.ts"')),
    { kind: "restarting", path: "/src/lib/a.ts" },
  );
  assert.deepEqual(
    watcherEvent('{"time":"t","level":"info","msg":"stopped"}'),
    { kind: "ended" },
  );
  assert.equal(watcherEvent('{"level":"info","msg":"listening"}'), undefined);
  assert.equal(watcherEvent("not json"), undefined);
});

Deno.test("spawnWatched() logs JSON lines only: the script's, its other output and the watcher's, across a restart", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dev-components-" });
  const script = `${dir}/component.ts`;
  const source = (run: number) =>
    [
      // The components log on standard error, as the watcher does.
      `console.error(JSON.stringify({ level: "info", msg: "run ${run}" }));`,
      `console.log("plain text on stdout");`,
      `console.error("${"\\x1b"}[31mred on stderr${"\\x1b"}[0m");`,
      `Deno.addSignalListener("SIGTERM", () => {`,
      `  console.error(JSON.stringify({ level: "info", msg: "stopped" }));`,
      `  Deno.exit(0);`,
      `});`,
      `setInterval(() => {}, 1000);`,
    ].join("\n");
  const restarts: string[] = [];
  try {
    await Deno.writeTextFile(script, source(1));
    const watched = spawnWatched(script, {
      flags: [],
      args: [],
      logFile: `${dir}/component.log`,
      onRestart: (path) => restarts.push(path),
    });
    try {
      const logged = (text: string) =>
        waitFor(
          `the log to have ${text}`,
          async () => (await watched.log()).includes(text) || undefined,
          { timeoutMs: 30_000, intervalMs: 50 },
        );
      await logged('"msg":"run 1"');
      await waitFor(
        "the watcher to report the run",
        () => Promise.resolve(watched.running || undefined),
        { timeoutMs: 10_000 },
      );
      await Deno.writeTextFile(script, source(2));
      await logged('"msg":"run 2"');
      assert.deepEqual(restarts, [script]);
    } finally {
      assert.equal(await watched.stop(), 137, "the watcher is killed");
    }
    const lines = (await watched.log()).trimEnd().split("\n");
    if (Deno.env.get("SHOW_LOG")) console.log(lines.join("\n"));
    const records = lines.map((line) => {
      assert.doesNotMatch(line, new RegExp(ESC), "no colour codes");
      const record = JSON.parse(line);
      assert.equal(typeof record, "object", line);
      return record as { level: string; msg: string; source?: string };
    });
    const has = (level: string, msg: string, source?: string) =>
      assert.ok(
        records.some((r) =>
          r.level === level && r.msg === msg && r.source === source
        ),
        `${level} ${msg} ${source} in\n${lines.join("\n")}`,
      );
    has("info", "Process started.", "watcher");
    has("info", "run 1");
    has("info", "run 2");
    has("info", "plain text on stdout", "stdout");
    has("error", "red on stderr", "stderr");
    assert.equal(
      records.filter((r) => r.msg === "stopped").length,
      2,
      "each run was stopped gracefully: by the restart, then by stop()",
    );
    assert.ok(
      records.some((r) =>
        r.source === "watcher" && r.msg.startsWith("Restarting!")
      ),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
