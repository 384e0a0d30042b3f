/**
 * The world of `tests/e2e/operator_path_test.ts`: the operator's path of
 * docs/getting-started.md, "On a plain `kcp start`, with tokens", with a
 * working directory that stands for the checkout, the operator's files
 * (`tokens.csv`, `kcp-ca.crt`), `kubectl`, `deno` and the kubectl plugin on
 * `PATH`, and a {@linkcode DocShell} to run the guide's blocks in
 * ({@linkcode withOperatorPath}). Also the checks before any block runs:
 * the guide's ports free on this host, and step 1's token file as
 * patterns a real file's lines match.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  DocShell,
  markdownSections,
  operatorPath,
  type PathItem,
  sectionBlocks,
} from "./doc_shell.ts";
import { blockLabel } from "./doc_runs.ts";
import type { KcpServer } from "./kcp_server.ts";
import { installedPlugin } from "./plugin.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** The guide the path is read from, relative to the checkout. */
export const GUIDE = "docs/getting-started.md";

/** The heading of the guide's section the path starts at. */
export const PLAIN_PATH = "On a plain `kcp start`, with tokens";

/**
 * The ports the path's components bind, as the guide has them: the
 * webhook's defaults (admission `:9443`, metrics `:8080`, probes `:8081`)
 * and the controller's `--metrics-bind-address=:8090
 * --health-probe-bind-address=:8091`.
 */
export const GUIDE_PORTS = [9443, 8080, 8081, 8090, 8091] as const;

/**
 * Throws, naming the port, when one of `ports` is taken on this host (the
 * components would otherwise die at start with `AddrInUse`, in the log of a
 * block run in the background).
 */
export function assertPortsFree(ports: readonly number[]): void {
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

/** The lines of step 1's token file, as patterns a real file's lines match. */
export function tokenLinePatterns(markdown: string): RegExp[] {
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

/** A fresh directory with a link to each top-level entry of the checkout. */
async function checkoutCopy(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "dep-ctrl-operator-path-" });
  for await (const entry of Deno.readDir(ROOT)) {
    if (entry.name.startsWith(".")) continue;
    await Deno.symlink(`${ROOT}${entry.name}`, `${dir}/${entry.name}`);
  }
  return dir;
}

/** What {@linkcode withOperatorPath} hands its body. */
export interface OperatorPathWorld {
  /** The guide's Markdown. */
  markdown: string;
  /** The path of {@linkcode PLAIN_PATH}, as `operatorPath` reads it. */
  path: PathItem[];
  /** The working directory that stands for the checkout. */
  work: string;
  /** The shell the guide's blocks run in, in {@linkcode OperatorPathWorld.work}. */
  shell: DocShell;
  /** Where a block comes from, for step names and messages. */
  label(item: PathItem): string;
  /**
   * The operator's files in the working directory: `tokens` as
   * `tokens.csv`, kcp's serving CA as `kcp-ca.crt`, and kcp's kubectl and
   * this Deno in the directory first on the shell's `PATH`.
   */
  writeOperatorFiles(tokens: string): Promise<void>;
}

/**
 * Runs `body` with the operator's world on `kcp`: the guide read, the
 * plugin installed (`installedPlugin`), a working directory linking the
 * checkout, and a shell whose `PATH` has `kubectl` and `deno` first, then
 * the plugin, with `KCP` set to kcp's address and no `KUBECONFIG`.
 * Afterwards the processes the blocks started are stopped and the working
 * directory removed; when `body` failed, their logs are printed first, and
 * with `KEEP_KCP_ROOT` the directory is kept.
 */
export async function withOperatorPath(
  kcp: KcpServer,
  body: (world: OperatorPathWorld) => Promise<void>,
): Promise<void> {
  const markdown = await Deno.readTextFile(`${ROOT}${GUIDE}`);
  const path = operatorPath(markdown, PLAIN_PATH);
  const plugin = await installedPlugin();
  const work = await checkoutCopy();
  const bin = `${work}/.bin`;
  const env = Deno.env.toObject();
  delete env.KUBECONFIG;
  const shell = new DocShell({
    cwd: work,
    stateDir: `${work}/.shell`,
    env: {
      ...env,
      PATH: `${bin}:${plugin}:${env.PATH ?? "/usr/bin:/bin"}`,
      KCP: kcp.baseUrl,
    },
  });
  let failed = true;
  try {
    await body({
      markdown,
      path,
      work,
      shell,
      label: (item) => blockLabel(GUIDE, item),
      async writeOperatorFiles(tokens) {
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
}
