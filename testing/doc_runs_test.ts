import assert from "node:assert/strict";
import {
  blockFailure,
  blockLabel,
  blockPassed,
  docSteps,
  runBlock,
} from "./doc_runs.ts";
import type { RunItem } from "./doc_runs.ts";
import { type BlockRun, DocShell } from "./doc_shell.ts";

function item(fields: Partial<RunItem> = {}): RunItem {
  return {
    kind: "run",
    from: "Upgrades",
    block: { lang: "sh", text: "echo hi\n", line: 12, before: "", after: "" },
    mustFail: false,
    retryMs: 0,
    ...fields,
  };
}

function run(code: number | undefined, output = ""): BlockRun {
  return { code, output, ms: 1 };
}

Deno.test("blockLabel names the doc, the line and the section", () => {
  assert.equal(blockLabel("docs/x.md", item()), "docs/x.md:12 (Upgrades)");
});

Deno.test("blockPassed wants the exit the doc shows and its output", () => {
  assert.ok(blockPassed(item(), run(0)));
  assert.ok(!blockPassed(item(), run(undefined)));
  assert.ok(!blockPassed(item(), run(1)));
  assert.ok(blockPassed(item({ mustFail: true }), run(1)));
  assert.ok(!blockPassed(item({ mustFail: true }), run(0)));
  assert.ok(!blockPassed(item({ mustFail: true, exitCode: 2 }), run(1)));
  assert.ok(blockPassed(item({ mustFail: true, exitCode: 2 }), run(2)));
  const shows = item({ expected: "NAME   AGE\nthing  5s\n" });
  assert.ok(blockPassed(shows, run(0, "NAME AGE\nthing 3m\n")));
  assert.ok(!blockPassed(shows, run(0, "NAME AGE\n")));
});

Deno.test("blockFailure says what went wrong, with the block, its output and what the doc shows", () => {
  const reasons: [RunItem, BlockRun, string][] = [
    [item(), run(undefined), "did not finish"],
    [item({ mustFail: true }), run(0), "succeeded where the guide shows"],
    [item(), run(4), "failed (exit 4)"],
    [item({ mustFail: true, exitCode: 2 }), run(1), "exited 1 where the guide"],
    [item({ expected: "x\n" }), run(0, "y\n"), "does not print what the guide"],
  ];
  for (const [i, r, reason] of reasons) {
    const message = blockFailure("docs/x.md:12 (Upgrades)", i, r);
    assert.ok(message.startsWith(`docs/x.md:12 (Upgrades): ${reason}`));
    assert.match(message, /--- block ---\necho hi\n--- output ---\n/);
  }
  assert.match(
    blockFailure("l", item({ expected: "x\n" }), run(0, "y\n")),
    /--- output ---\ny\n--- the guide shows ---\nx\n$/,
  );
});

Deno.test("runBlock runs a block again while it fails and its prose allows", async () => {
  const dir = await Deno.makeTempDir({ prefix: "doc-runs-test-" });
  const shell = new DocShell({
    cwd: dir,
    stateDir: `${dir}/.shell`,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
  });
  try {
    // Passes on its second run.
    const text = "echo x >>runs\n[ $(wc -l <runs) -ge 2 ]\n";
    const once = await runBlock(
      shell,
      item({ block: { ...item().block, text } }),
    );
    assert.equal(once.code, 1);
    await Deno.remove(`${dir}/runs`);
    const again = await runBlock(
      shell,
      item({ block: { ...item().block, text }, retryMs: 10_000 }),
    );
    assert.equal(again.code, 0);
    assert.equal(await Deno.readTextFile(`${dir}/runs`), "x\nx\n");
  } finally {
    await shell.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docSteps runs each block as a step named by its label, failing the step of a block that does not do what the doc shows", async () => {
  const dir = await Deno.makeTempDir({ prefix: "doc-runs-test-" });
  const shell = new DocShell({
    cwd: dir,
    stateDir: `${dir}/.shell`,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
  });
  const steps: [string, string][] = [];
  const step = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
      steps.push([name, "ok"]);
    } catch (error) {
      steps.push([name, (error as Error).message.split("\n")[0]!]);
    }
  };
  try {
    const block = item().block;
    await docSteps(step, [
      item({ expected: "hi\n" }),
      item({ block: { ...block, line: 20, text: "false\n" } }),
      { kind: "skip", from: "Upgrades", block, reason: "placeholder" },
    ], { doc: "docs/x.md", shell });
    assert.deepEqual(steps, [
      ["docs/x.md:12 (Upgrades)", "ok"],
      ["docs/x.md:20 (Upgrades)", "docs/x.md:20 (Upgrades): failed (exit 1)"],
      [
        "docs/x.md:12 (Upgrades)",
        "docs/x.md:12 (Upgrades): a skip item, not a block to run",
      ],
    ]);
  } finally {
    await shell.stop(1_000);
    await Deno.remove(dir, { recursive: true });
  }
});
