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
 * What differs from an operator at a terminal, all of it (the world
 * `testing/operator_path_world.ts` builds, the block runs of
 * `testing/doc_runs.ts`):
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
import { blockFailure, blockPassed, runBlock } from "../../testing/doc_runs.ts";
import { kcpTest } from "../../testing/kcp_suite.ts";
import {
  assertPortsFree,
  GUIDE_PORTS,
  tokenLinePatterns,
  withOperatorPath,
} from "../../testing/operator_path_world.ts";

kcpTest(
  "the operator's path of getting-started runs as written on a plain kcp start",
  async (kcp, step) => {
    await withOperatorPath(kcp, async (w) => {
      await step(
        "the guide's ports are free on this host",
        () => Promise.resolve(assertPortsFree(GUIDE_PORTS)),
      );
      await step(
        "the operator's files: tokens.csv of step 1, kcp-ca.crt",
        async () => {
          const tokens = await Deno.readTextFile(`${kcp.rootDir}/tokens.csv`);
          const lines = tokens.trim().split("\n");
          for (const pattern of tokenLinePatterns(w.markdown)) {
            assert.ok(
              lines.some((line) => pattern.test(line)),
              `kcp's token file has no line like ${pattern}`,
            );
          }
          await w.writeOperatorFiles(tokens);
        },
      );
      const skipped = w.path.filter((item) => item.kind === "skip");
      for (const item of skipped) {
        console.log(`left out ${w.label(item)}: ${item.reason}`);
      }
      for (const item of w.path) {
        if (item.kind === "skip") continue;
        await step(w.label(item), async () => {
          if (item.kind === "save") {
            await Deno.writeTextFile(`${w.work}/${item.file}`, item.block.text);
            return;
          }
          const run = await runBlock(w.shell, item);
          assert.ok(
            blockPassed(item, run),
            blockFailure(w.label(item), item, run),
          );
        });
      }
      await step("the path ends where the guide's does", async () => {
        const runs = w.path.filter((i) => i.kind === "run");
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
          await w.shell.jobsAlive(),
          `a component the path started has exited\n${await w.shell
            .backgroundLogs()}`,
        );
      });
    });
  },
);
