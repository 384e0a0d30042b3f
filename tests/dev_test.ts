/**
 * `deno task dev`, as a person runs it: `--once` starts a local kcp with the
 * demo topology and both components, shows a delete denied and then allowed,
 * and cleans up; `--once --shards 2` does the same on a sharded kcp (two
 * shards behind kcp-front-proxy) with a consumer on each shard. Their output
 * is printed, so the CI log shows the walk-through. `--help` and bad flags
 * answer before anything is built.
 */
import assert from "node:assert/strict";
import { type CommandResult, runCommand } from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** `deno <args>` at the repository's root, without colours, `env` added. */
function runDeno(
  args: string[],
  env: Record<string, string> = {},
): Promise<CommandResult> {
  return runCommand(Deno.execPath(), args, {
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
  });
}

/** The number of steps the walk-through numbers (`[n/STEPS]`). */
const STEPS = 12;

/** Where `text` first matches `pattern` after `from`, or -1. */
function indexAfter(text: string, pattern: RegExp, from: number): number {
  const found = text.slice(from).search(pattern);
  return found < 0 ? -1 : from + found;
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
    const { code, stdout, stderr } = await runDeno([
      "task",
      "dev",
      "--once",
      `--dir=${dir}`,
    ]);
    console.log(stdout);
    assert.equal(code, 0, `deno task dev --once exited ${code}:\n${stderr}`);
    for (let step = 1; step <= STEPS; step++) {
      assert.match(stdout, new RegExp(`^\\[${step}/${STEPS}\\] `, "m"));
    }
    // The plugin answers the dry run's question as a tree.
    assert.match(
      stdout,
      /\$ kubectl dependencies --kubeconfig=\S+ why vpc\/vpc-a --recursive\n +VPC default\/vpc-a is held by:\n +\S+ referenced by VirtualMachine default\/vm-1 \(\.spec\.vpcRef\.name; rule /,
    );
    // Where the graph page and the holds are.
    assert.match(stdout, /graph: +http:\/\/127\.0\.0\.1:\d+\/graph /);
    assert.match(stdout, /holds: +http:\/\/127\.0\.0\.1:\d+\/holds\.json /);
    // The waits say what they wait for.
    assert.match(
      stdout,
      /^ +waiting for kcp to answer \/readyz .*\n(?: +\.\.\. still waiting for kcp .*\(\d+s\)\n)* +kcp is ready at /m,
    );
    assert.match(
      stdout,
      /^ +waiting for the demo's workspaces, APIExports and APIBindings to be ready/m,
    );
    // The rule's YAML, then its apply.
    assert.match(
      stdout,
      /\$ cat testing\/fixtures\/compute\/dependencyrule-vm-vpc\.yaml\n(?: {8}.*\n)* {8}kind: DependencyRule\n(?: {8}.*\n)* +\$ kubectl --kubeconfig=\S+ apply -f testing\/fixtures\/compute\/dependencyrule-vm-vpc\.yaml\n/,
    );
    // The grant, as an operator types it, with the demo's kubeconfigs.
    assert.match(
      stdout,
      /\$ deno task rbac --kubeconfig=\S*\/kubeconfigs\/webhook@root_dep-ctrl\.kubeconfig \| kubectl --kubeconfig=\S*\/kubeconfigs\/shardAdmin@system_admin\.kubeconfig apply -f -\n +clusterrole\.rbac\.authorization\.k8s\.io\/\S+ (created|configured|unchanged)/,
    );
    assert.match(stdout, /^ +vm-dependencies\s.*\sTrue\s+Enforced\s/m);
    const referenced =
      /denied the request: cannot delete vpcs\/vpc-a: still referenced by VirtualMachine\/vm-1 \(\.spec\.vpcRef\.name\)/;
    const dryRun = stdout.search(
      new RegExp(
        `\\$ kubectl --kubeconfig=\\S+ delete vpc vpc-a --dry-run=server\\n +.*${referenced.source}`,
      ),
    );
    const denied = indexAfter(
      stdout,
      new RegExp(
        `\\$ kubectl --kubeconfig=\\S+ delete vpc vpc-a\\n +.*${referenced.source}`,
      ),
      dryRun + 1,
    );
    const allowed = indexAfter(
      stdout,
      /vpc\.network\.example\.com "vpc-a" deleted/,
      denied + 1,
    );
    const gone = indexAfter(
      stdout,
      /\$ kubectl --kubeconfig=\S+ get vpc vpc-a\n +Error from server \(NotFound\): vpcs\.network\.example\.com "vpc-a" not found/,
      allowed + 1,
    );
    assert.ok(dryRun > 0, "a dry run asks what blocks the delete");
    assert.ok(denied > dryRun, "then the real delete is denied");
    assert.ok(allowed > denied, "the allowed delete comes after the denial");
    assert.ok(gone > allowed, "and the VPC is gone");
    // The Lock's YAML, then the denial with its reason, then the VPC gone.
    const lockYaml = stdout.search(
      /\$ cat \S*lock-prod\.yaml\n(?: {8}.*\n)* {8}kind: Lock\n(?: {8}.*\n)* {10}reason: "production VPC, ask #netops"\n/,
    );
    const locked = indexAfter(
      stdout,
      /cannot delete vpcs\/vpc-prod: locked by Lock default\/prod \("production VPC, ask #netops"\)/,
      lockYaml + 1,
    );
    const unlocked = indexAfter(
      stdout,
      /\$ kubectl --kubeconfig=\S+ get vpc vpc-prod\n +Error from server \(NotFound\)/,
      locked + 1,
    );
    assert.ok(lockYaml > gone, "the Lock's YAML is shown");
    assert.ok(locked > lockYaml, "the locked VPC's delete is denied");
    assert.ok(unlocked > locked, "once unlocked, the VPC is deleted");
    // The owner rule: the Subnet's delete denied naming its VPC and label,
    // the switch turned off, the delete let through.
    const ownerRule = indexAfter(
      stdout,
      /\$ cat \S*rule-subnet-belongs-to-vpc\.yaml\n(?: {8}.*\n)* {10}when: object\.spec\.deletionProtection == true\n/,
      unlocked + 1,
    );
    const owned = indexAfter(
      stdout,
      /cannot delete subnets\/subnet-1: it belongs to VPC\/vpc-net \(\.metadata\.labels\["network\.example\.com\/vpc"\], with object\.spec\.deletionProtection == true\), which still exists/,
      ownerRule + 1,
    );
    const released = indexAfter(
      stdout,
      /\$ kubectl --kubeconfig=\S+ delete subnet subnet-1\n +subnet\.network\.example\.com "subnet-1" deleted/,
      owned + 1,
    );
    assert.ok(ownerRule > unlocked, "the owner rule's YAML is shown");
    assert.ok(owned > ownerRule, "the owned Subnet's delete is denied");
    assert.ok(released > owned, "with the switch off, the Subnet is deleted");
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
    const { code, stdout, stderr } = await runDeno([
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
    for (let step = 1; step <= STEPS; step++) {
      assert.match(stdout, new RegExp(`^\\[${step}/${STEPS}\\] `, "m"));
    }
    assert.match(
      stdout,
      /kcp-front-proxy is ready at https:\/\/127\.0\.0\.1:\d+/,
    );
    // The grant goes to system:admin of each shard, with its own kubeconfig.
    const grants = [
      ...stdout.matchAll(
        /\$ deno task rbac --kubeconfig=\S+ \| kubectl --kubeconfig=(\S+) apply -f -\n +clusterrole\S+ (?:created|configured|unchanged)/g,
      ),
    ].map((m) => m[1]);
    assert.equal(new Set(grants).size, 2, `one grant per shard: ${grants}`);
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
    assert.match(stdout, /^ +vm-dependencies\s.*\sTrue\s+Enforced\s/m);
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
      const dryRun = stdout.search(
        new RegExp(
          `${
            command("delete vpc vpc-a --dry-run=server")
          } +.*denied the request: cannot delete vpcs/vpc-a: still referenced`,
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
      assert.ok(dryRun > 0, `the dry run in ${consumer} is shown`);
      assert.ok(denied > dryRun, `then the denied delete in ${consumer}`);
      assert.ok(allowed > denied, `then the allowed delete in ${consumer}`);
      assert.ok(locked > allowed, `then the locked VPC in ${consumer}`);
      const owned = stdout.search(
        new RegExp(
          `${
            command("delete subnet subnet-1")
          } +.*cannot delete subnets/subnet-1: it belongs to VPC/vpc-net`,
        ),
      );
      const released = stdout.search(
        new RegExp(
          `${
            command("delete subnet subnet-1")
          } +subnet\\.network\\.example\\.com "subnet-1" deleted`,
        ),
      );
      assert.ok(owned > locked, `then the owned Subnet in ${consumer}`);
      assert.ok(released > owned, `then the released Subnet in ${consumer}`);
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
  const unknown = await runDeno(["run", "--allow-all", script, "--bogus"]);
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
    const bad = await runDeno(["run", "--allow-all", script, ...args]);
    assert.equal(bad.code, 2, args.join(" "));
    assert.match(bad.stderr, message);
    assert.match(bad.stderr, /Usage: deno task dev/);
  }

  const help = await runDeno(["run", "--allow-all", script, "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--once/);
  assert.match(help.stdout, /--shards=<n>/);

  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/precious.txt`, "keep me");
    const refused = await runDeno([
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

Deno.test("deno task dev --help and a bad flag answer before anything is built", async () => {
  // A kcp that does not exist fails any build: nothing may try one.
  const env = {
    KCP_BIN: "/nonexistent/kcp",
    KUBECTL_BIN: "/nonexistent/kubectl",
  };
  const help = await runDeno(["task", "dev", "--help"], env);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: deno task dev /m);
  assert.doesNotMatch(help.stdout + help.stderr, /kcp:build/);

  const bad = await runDeno(["task", "dev", "--once", "--bogus"], env);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /Unknown argument --bogus\n\nUsage: deno task dev /);
  assert.doesNotMatch(bad.stdout + bad.stderr, /kcp:build/);
});
