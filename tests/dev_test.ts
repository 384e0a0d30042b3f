/**
 * `deno task dev`, as a person runs it: `--once` starts a local kcp with the
 * demo topology and both components, shows a delete denied and then allowed,
 * and cleans up; `--once --shards 2` does the same on a sharded kcp (two
 * shards behind kcp-front-proxy) with a consumer on each shard. Their output
 * is printed, so the CI log shows the walk-through.
 */
import assert from "node:assert/strict";
import { type CommandResult, runCommand } from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;

function run(args: string[]): Promise<CommandResult> {
  return runCommand(Deno.execPath(), args, {
    cwd: ROOT,
    env: { NO_COLOR: "1" },
  });
}

/** The processes whose command line names `dir`: what a run left behind. */
async function processesUsing(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name) || entry.name === String(Deno.pid)) continue;
    const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`)
      .catch(() => "");
    if (cmdline.includes(dir)) {
      found.push(`${entry.name}: ${cmdline.replaceAll("\0", " ").trim()}`);
    }
  }
  return found;
}

Deno.test("deno task dev --once walks through a denied and an allowed delete on a local kcp", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dependency-controller-dev-" });
  await Deno.remove(dir);
  try {
    const { code, stdout, stderr } = await run([
      "task",
      "dev",
      "--once",
      `--dir=${dir}`,
    ]);
    console.log(stdout);
    assert.equal(code, 0, `deno task dev --once exited ${code}:\n${stderr}`);
    for (let step = 1; step <= 10; step++) {
      assert.match(stdout, new RegExp(`^\\[${step}/10\\] `, "m"));
    }
    const denied = stdout.search(
      /denied the request: cannot delete vpcs\/vpc-a: still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/,
    );
    const allowed = stdout.search(/vpc\.network\.example\.com "vpc-a" deleted/);
    assert.ok(denied > 0, "the denied delete is shown with its message");
    assert.ok(allowed > denied, "the allowed delete comes after the denial");
    assert.match(stdout, /vm-dependencies\s+True\s+Enforced/);
    assert.match(
      stdout,
      /cannot delete vpcs\/vpc-prod: locked by Lock default\/prod \("production VPC, ask #netops"\)/,
    );
    await assert.rejects(
      Deno.stat(dir),
      Deno.errors.NotFound,
      "the dev directory is removed at exit",
    );
    assert.deepEqual(await processesUsing(dir), [], "no process is left");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("deno task dev --once --shards 2 walks through the same on two shards, a consumer on each", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dependency-controller-dev-" });
  await Deno.remove(dir);
  try {
    const { code, stdout, stderr } = await run([
      "task",
      "dev",
      "--once",
      "--shards",
      "2",
      `--dir=${dir}`,
    ]);
    console.log(stdout);
    assert.equal(
      code,
      0,
      `deno task dev --once --shards 2 exited ${code}:\n${stderr}`,
    );
    for (let step = 1; step <= 10; step++) {
      assert.match(stdout, new RegExp(`^\\[${step}/10\\] `, "m"));
    }
    assert.match(
      stdout,
      /kcp-front-proxy is ready at https:\/\/127\.0\.0\.1:\d+/,
    );
    // The placement, as printed: workspace, its shard, what it is.
    for (
      const [path, shard] of [
        ["root:dep-ctrl", "root"],
        ["root:providers:network", "root"],
        ["root:providers:compute", "shard-1"],
        ["root:consumers:c1", "root"],
        ["root:consumers:c2", "shard-1"],
      ]
    ) {
      assert.match(
        stdout,
        new RegExp(`^ +${path} +${shard} +\\S`, "m"),
        `${path} is shown on shard ${shard}`,
      );
    }
    assert.match(stdout, /vm-dependencies\s+True\s+Enforced/);
    for (const consumer of ["c1", "c2"]) {
      // The command (its kubeconfig names the workspace), then its answer.
      const command = (args: string) =>
        `\\$ kubectl --kubeconfig=\\S*admin@root_consumers_${consumer}\\.kubeconfig ${args}\\n`;
      const denied = stdout.search(
        new RegExp(
          `${
            command("delete vpc vpc-a")
          } +.*denied the request: cannot delete vpcs/vpc-a: still referenced by VirtualMachine/vm-1 \\(\\.spec\\.vpcRef\\.name\\)`,
        ),
      );
      const allowed = stdout.search(
        new RegExp(
          `${
            command("delete vpc vpc-a")
          } +vpc\\.network\\.example\\.com "vpc-a" deleted`,
        ),
      );
      const locked = stdout.search(
        new RegExp(
          `${
            command("delete vpc vpc-prod")
          } +.*cannot delete vpcs/vpc-prod: locked by Lock default/prod \\("production VPC, ask #netops"\\)`,
        ),
      );
      assert.ok(denied > 0, `the denied delete in ${consumer} is shown`);
      assert.ok(allowed > denied, `then the allowed delete in ${consumer}`);
      assert.ok(locked > allowed, `then the locked VPC in ${consumer}`);
    }
    await assert.rejects(
      Deno.stat(dir),
      Deno.errors.NotFound,
      "the dev directory is removed at exit",
    );
    assert.deepEqual(await processesUsing(dir), [], "no process is left");
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("deno task dev refuses unknown arguments and a directory it did not make", async () => {
  const script = "scripts/dev.ts";
  const unknown = await run(["run", "--allow-all", script, "--bogus"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Unknown argument --bogus/);
  assert.match(unknown.stderr, /Usage: deno task dev/);

  for (
    const [args, message] of [
      [["--shards=3"], /--shards must be 1 or 2, not '3'/],
      [["--shards", "0"], /--shards must be 1 or 2, not '0'/],
      [["--shards=two"], /--shards must be 1 or 2, not 'two'/],
      [["--shards"], /--shards needs a value: 1 or 2/],
      [["--shards", "--once"], /--shards must be 1 or 2, not '--once'/],
    ] as const
  ) {
    const bad = await run(["run", "--allow-all", script, ...args]);
    assert.equal(bad.code, 2, args.join(" "));
    assert.match(bad.stderr, message);
    assert.match(bad.stderr, /Usage: deno task dev/);
  }

  const help = await run(["run", "--allow-all", script, "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--once/);
  assert.match(help.stdout, /--shards=<n>/);

  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/precious.txt`, "keep me");
    const refused = await run([
      "run",
      "--allow-all",
      script,
      "--once",
      `--dir=${dir}`,
    ]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /it is not empty \(precious\.txt\)/);
    assert.equal(await Deno.readTextFile(`${dir}/precious.txt`), "keep me");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
