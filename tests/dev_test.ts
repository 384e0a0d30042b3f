/**
 * `deno task dev`, as a person runs it: `--once` starts a local kcp with the
 * demo topology and both components, shows a delete denied and then allowed,
 * and cleans up. Its output is printed, so the CI log shows the walk-through.
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

  const help = await run(["run", "--allow-all", script, "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--once/);

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
