/**
 * The operator's path of docs/getting-started.md, "On a plain `kcp start`,
 * with tokens", run as written against a fresh kcp: the shell blocks of
 * that section and of the sections its prose tells the operator to run
 * ("run the commands of [step 2](#...)", "the checks of [step 3](#...)"),
 * read from the Markdown itself (`testing/doc_shell.ts`), in order, each
 * with bash, as one shell session. A block that fails fails the test (a
 * check the doc shows that cannot pass fails CI), and so does one that does
 * not print the output the doc shows after it. The path ends where the
 * guide's does: the rule `Ready True Enforced` (step 7), the VPC's delete
 * denied with the documented message, then allowed once the VM is gone,
 * and the kubectl plugin's `why` and `lock` on a tenant's Subnet (step 8),
 * all through kubectl as the guide runs it.
 *
 * What differs from an operator at a terminal, all of it:
 *
 * - kcp is the harness's (`startKcp`): one `kcp start` with a token file
 *   of the form step 1 shows (checked here, line by line) for the same
 *   users; the test copies that file into the working directory as
 *   `tokens.csv`, as the operator wrote it.
 * - The working directory stands for the checkout: a fresh directory with
 *   a link to each top-level entry of this repository, so that what the
 *   path writes (kubeconfigs, certificates, YAML) stays out of the
 *   checkout.
 * - What step 2 says the operator sets: `KCP` is kcp's address and
 *   `kcp-ca.crt` its serving CA, copied from `apiserver.crt` in kcp's root
 *   directory as step 2 says. `kubectl` (the harness's build) and
 *   `deno` (the Deno running this test) come first on `PATH`; `KUBECONFIG`
 *   is unset, as there is no hosting cluster.
 * - The kubectl plugin of step 8 is installed as
 *   [kubectl-plugin.md](../../docs/kubectl-plugin.md#install) says, by the
 *   command line of `deno task plugin:install` (`installedPlugin` of
 *   `testing/plugin.ts`), with `--root` and `--data` in a temporary
 *   directory, never the home directory; its `bin` is on `PATH` after
 *   kubectl's and deno's.
 * - The blocks the section tells the operator to leave out (hosting
 *   cluster, image, placeholders with no value) are left out, and listed.
 * - Each block runs in its own bash with `set -eo pipefail` and the
 *   functions and variables the blocks before it left, so a failing
 *   command fails its block (an operator would see its error).
 * - Where the guide says a check passes "within about N s", or to repeat a
 *   command "a few seconds later", the block is run again until it passes,
 *   for twice that long (20 s for the second).
 * - The components the path starts with `&` are stopped at the end (the
 *   guide's `kill %1 %2`), after checking that they still run. Their ports
 *   are the guide's own (`:9443`, `:8080`, `:8081`, `:8090`, `:8091`): the
 *   test first makes sure each is free on this host and, when one is not,
 *   fails at once naming it, before any block runs.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type BlockRun,
  DocShell,
  markdownSections,
  operatorPath,
  outputMatches,
  type PathItem,
  sectionBlocks,
} from "../../testing/doc_shell.ts";
import { kcpTest } from "../../testing/kcp_suite.ts";
import { installedPlugin } from "../../testing/plugin.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const GUIDE = "docs/getting-started.md";
const PLAIN_PATH = "On a plain `kcp start`, with tokens";

/** A fresh directory with a link to each top-level entry of the checkout. */
async function checkoutCopy(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dep-ctrl-operator-path-" });
  for await (const entry of Deno.readDir(ROOT)) {
    if (entry.name.startsWith(".")) continue;
    await Deno.symlink(`${ROOT}${entry.name}`, `${dir}/${entry.name}`);
  }
  return dir;
}

/** The lines of step 1's token file, as patterns a real file's lines match. */
function tokenLinePatterns(markdown: string): RegExp[] {
  const section = markdownSections(markdown).find((s) =>
    s.heading === PLAIN_PATH
  );
  const block = sectionBlocks(section!).find((b) => b.lang === "text");
  assert.ok(block, "step 1 shows no token file");
  return block.text.trim().split("\n").map((line) =>
    new RegExp(
      `^${
        line.split(/<[^>]*token>/).map((part) =>
          part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        ).join("[^,]+")
      }$`,
    )
  );
}

/**
 * The ports the path's components bind, as the guide has them: the
 * webhook's defaults (admission `:9443`, metrics `:8080`, probes `:8081`)
 * and the controller's `--metrics-bind-address=:8090
 * --health-probe-bind-address=:8091`.
 */
const GUIDE_PORTS = [9443, 8080, 8081, 8090, 8091] as const;

/**
 * Throws, naming the port, when one of `ports` is taken on this host (the
 * components would otherwise die at start with `AddrInUse`, in the log of a
 * block run in the background).
 */
function assertPortsFree(ports: readonly number[]): void {
  for (const port of ports) {
    let listener: Deno.Listener;
    try {
      listener = Deno.listen({ port });
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
      throw new Error(
        `port :${port} is taken on this host: the operator's path starts the components on the guide's own ports (${
          ports.map((p) => `:${p}`).join(", ")
        }); stop what listens on :${port} and run the test again`,
      );
    }
    listener.close();
  }
}

/** Where a block comes from, for step names and messages. */
function label(item: PathItem): string {
  return `${GUIDE}:${item.block.line} (${item.from})`;
}

/** Whether a run did what the guide shows. */
function passed(item: PathItem & { kind: "run" }, run: BlockRun): boolean {
  if (run.code === undefined) return false;
  if (item.mustFail !== (run.code !== 0)) return false;
  if (item.exitCode !== undefined && run.code !== item.exitCode) return false;
  return item.expected === undefined ||
    outputMatches(item.expected, run.output);
}

kcpTest(
  "the operator's path of getting-started runs as written on a plain kcp start",
  async (kcp, step) => {
    const markdown = await Deno.readTextFile(`${ROOT}${GUIDE}`);
    const path = operatorPath(markdown, PLAIN_PATH);
    const plugin = await installedPlugin();
    const work = await checkoutCopy();
    const bin = `${work}/.bin`;
    const shell = new DocShell({
      cwd: work,
      stateDir: `${work}/.shell`,
      env: (() => {
        const env = Deno.env.toObject();
        delete env.KUBECONFIG;
        return {
          ...env,
          PATH: `${bin}:${plugin}:${env.PATH ?? "/usr/bin:/bin"}`,
          KCP: kcp.baseUrl,
        };
      })(),
    });
    let failed = true;
    try {
      await step(
        "the guide's ports are free on this host",
        () => Promise.resolve(assertPortsFree(GUIDE_PORTS)),
      );
      await step(
        "the operator's files: tokens.csv of step 1, kcp-ca.crt",
        async () => {
          const tokens = await Deno.readTextFile(`${kcp.rootDir}/tokens.csv`);
          const lines = tokens.trim().split("\n");
          for (const pattern of tokenLinePatterns(markdown)) {
            assert.ok(
              lines.some((line) => pattern.test(line)),
              `kcp's token file has no line like ${pattern}`,
            );
          }
          await Deno.writeTextFile(`${work}/tokens.csv`, tokens);
          // Step 2: "one `kcp start` makes a self-signed certificate,
          // `.kcp/apiserver.crt`" (the harness's root directory is `.kcp`).
          await Deno.copyFile(
            `${kcp.rootDir}/apiserver.crt`,
            `${work}/kcp-ca.crt`,
          );
          await Deno.mkdir(bin);
          await Deno.symlink(kcp.binaries.kubectl, `${bin}/kubectl`);
          await Deno.symlink(Deno.execPath(), `${bin}/deno`);
        },
      );
      const skipped = path.filter((item) => item.kind === "skip");
      for (const item of skipped) {
        console.log(`left out ${label(item)}: ${item.reason}`);
      }
      for (const item of path) {
        if (item.kind === "skip") continue;
        await step(label(item), async () => {
          if (item.kind === "save") {
            await Deno.writeTextFile(`${work}/${item.file}`, item.block.text);
            return;
          }
          const started = Date.now();
          let run = await shell.run(item.block.text);
          while (!passed(item, run) && Date.now() - started < item.retryMs) {
            await new Promise((resolve) => setTimeout(resolve, 2_000));
            run = await shell.run(item.block.text);
          }
          assert.ok(
            passed(item, run),
            `${label(item)}: ${
              run.code === undefined
                ? "did not finish"
                : item.mustFail && run.code === 0
                ? "succeeded where the guide shows an error"
                : run.code !== 0 && !item.mustFail
                ? `failed (exit ${run.code})`
                : item.exitCode !== undefined && run.code !== item.exitCode
                ? `exited ${run.code} where the guide says ${item.exitCode}`
                : "does not print what the guide shows"
            }\n--- block ---\n${item.block.text}--- output ---\n${run.output}${
              item.expected === undefined
                ? ""
                : `--- the guide shows ---\n${item.expected}`
            }`,
          );
        });
      }
      await step("the path ends where the guide's does", async () => {
        const runs = path.filter((i) => i.kind === "run");
        assert.ok(
          runs.some((i) =>
            /\bReady\s+True\s+Enforced\b/.test(i.expected ?? "")
          ),
          "no block shows the rule Enforced",
        );
        assert.ok(
          runs.some((i) =>
            i.mustFail &&
            /cannot delete vpcs\/vpc-a: still referenced by VirtualMachine\/vm-1/
              .test(i.expected ?? "")
          ),
          "no block shows the VPC's delete denied",
        );
        assert.ok(
          runs.some((i) => /"vpc-a" deleted/.test(i.expected ?? "")),
          "no block shows the VPC deleted once the VM is gone",
        );
        assert.ok(
          runs.some((i) =>
            /^kubectl dependencies why /m.test(i.block.text) &&
            i.exitCode === 1 && /is held by:/.test(i.expected ?? "")
          ),
          "no block shows the plugin's why on a held object",
        );
        assert.ok(
          runs.some((i) =>
            /^kubectl dependencies lock /m.test(i.block.text) &&
            i.expected !== undefined
          ),
          "no block shows the plugin's lock",
        );
        assert.ok(
          await shell.jobsAlive(),
          `a component the path started has exited\n${await shell
            .backgroundLogs()}`,
        );
      });
      failed = false;
    } finally {
      if (failed) console.error(await shell.backgroundLogs());
      await shell.stop();
      if (!(failed && Deno.env.has("KEEP_KCP_ROOT"))) {
        await Deno.remove(work, { recursive: true }).catch(() => {});
      } else {
        console.error(`working directory kept: ${work}`);
      }
    }
  },
);
