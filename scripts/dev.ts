/**
 * `deno task dev`: the whole system on a local kcp, in one command.
 *
 * Reads its flags first (`--help` and a mistyped flag answer before
 * anything is built), builds kcp and kubectl unless they are cached
 * (`testing/kcp/build.ts`, with a heartbeat while Go compiles), starts kcp
 * on loopback (root directory `.dev/kcp`), builds the demo topology from
 * `manifests/kcp` (the dep-ctrl workspace, a network and a compute
 * provider, two consumers), starts the webhook and the controller as their
 * own processes with their own identities (restarted by `deno run --watch`
 * when their source changes; their logs are JSON lines), and walks through
 * the protection once (`scripts/dev/walk_through.ts`): a DependencyRule and
 * the webhook's reads granted as an operator does, a VPC and a
 * VirtualMachine that refers to it, a dry run asking what blocks the VPC's
 * delete, the denied delete, the VM deleted, the VPC deleted and gone, a
 * Lock that keeps a VPC until it is deleted. Then it keeps everything
 * running and prints how to use it, until Ctrl-C.
 *
 * With `--shards 2` kcp is sharded as in production (`testing/sharded_kcp.ts`):
 * a cache server, the root shard, a second shard `shard-1` and
 * `kcp-front-proxy`. The dep-ctrl workspace, the network provider and the
 * consumer `root:consumers:c1` are placed on the root shard, the compute
 * provider and the consumer `root:consumers:c2` on shard-1. The components,
 * kubectl and the printed kubeconfigs talk to kcp through the front-proxy,
 * and the walk-through runs in both consumers, so protection is shown on
 * each shard. `kcp-front-proxy` and `cache-server` are built too unless
 * they are cached.
 *
 *   deno task dev                # keep running until Ctrl-C
 *   deno task dev --once         # exit after the walk-through (what CI runs)
 *   deno task dev --shards 2     # the same on two shards behind a front-proxy
 *
 * @module
 */
import { errorText, stopSignal } from "../lib/runtime/mod.ts";
import { binariesFor, HELP, parseDevArgs, wantsHelp } from "./dev/args.ts";
import { Running } from "./dev/kcp.ts";
import {
  bold,
  cyan,
  dim,
  elapsed,
  green,
  note,
  red,
  shown,
  startSteps,
  step,
} from "./dev/output.ts";
import { printUsage } from "./dev/usage.ts";
import { STEPS, walkThrough } from "./dev/walk_through.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/**
 * Makes `dir` ours: absent, empty, or left behind by an earlier run (it
 * holds `dev.pid`) whose process is gone. Anything else is refused, so a
 * mistyped `--dir` never deletes someone's files. Once it is ours,
 * `running` removes it at the end.
 */
async function claimDevDir(dir: string, running: Running): Promise<void> {
  const pidFile = `${dir}/dev.pid`;
  const previous = await Deno.readTextFile(pidFile).catch(() => undefined);
  if (previous === undefined) {
    await Deno.mkdir(dir, { recursive: true });
    for await (const entry of Deno.readDir(dir)) {
      throw new Error(
        `Cannot use ${shown(dir)}: it is not empty (${entry.name}) and ` +
          "no earlier 'deno task dev' made it; pick another --dir",
      );
    }
  } else {
    const pid = Number.parseInt(previous, 10);
    if (Number.isInteger(pid) && isAlive(pid)) {
      throw new Error(
        `Cannot start: another 'deno task dev' (pid ${pid}) uses ${
          shown(dir)
        }; stop it with Ctrl-C first, or pick another --dir`,
      );
    }
    await Deno.remove(dir, { recursive: true });
    await Deno.mkdir(dir, { recursive: true });
  }
  await Deno.writeTextFile(pidFile, `${Deno.pid}\n`);
  running.dir = dir;
}

function isAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/**
 * Builds the binaries unless they are cached, as `deno task kcp:build`
 * does (its output, heartbeat included, goes straight to the terminal).
 * Aborting `signal` stops the build.
 */
async function buildBinaries(
  binaries: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-run",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      `${ROOT}testing/kcp/build.ts`,
      ...binaries,
    ],
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
    signal,
  }).output();
  if (code !== 0 && !signal.aborted) {
    throw new Error(
      `Cannot build ${binaries.join(", ")} (exit ${code}, see above)`,
    );
  }
}

async function main(args: string[]): Promise<number> {
  if (wantsHelp(args)) {
    console.log(HELP);
    return 0;
  }
  const options = parseDevArgs(args);
  if (typeof options === "string") {
    console.error(`${options}\n\n${HELP}`);
    return 2;
  }
  const dir = options.dir ?? `${ROOT}.dev`;
  const running = new Running();
  const signal = stopSignal();
  const building = new AbortController();
  let reportRestarts = false;
  try {
    await claimDevDir(dir, running);
    const outcome = await Promise.race([
      (async () => {
        await buildBinaries(binariesFor(options), building.signal);
        startSteps(STEPS);
        return {
          walked: await walkThrough(running, {
            dir,
            shards: options.shards,
            kcpVersion: options.kcpVersion,
            onRestart: (component, path) => {
              if (reportRestarts) {
                note(`${cyan(component)} restarted: ${shown(path)} changed`);
              }
            },
          }),
        };
      })(),
      signal.then((name) => ({ name })),
    ]);
    if ("name" in outcome) {
      building.abort();
      console.log(
        `\n${bold(`${outcome.name}: stopping`)} the components and kcp ...`,
      );
      return 130;
    }
    console.log(`\n${green(`Walk-through done in ${elapsed()}.`)}`);
    if (options.once) {
      step("Stopping the components and kcp (--once)");
      return 0;
    }
    step("Running until Ctrl-C");
    await printUsage(running.kcp!, outcome.walked);
    reportRestarts = true;
    const name = await signal;
    reportRestarts = false;
    console.log(`\n${bold(`${name}: stopping`)} the components and kcp ...`);
    return 0;
  } catch (error) {
    console.error(`\n${red("dev failed:")} ${errorText(error)}`);
    if (running.kcp !== undefined) {
      console.error(dim(await running.kcp.logTails(20)));
    }
    return 1;
  } finally {
    const stopping = performance.now();
    await running.stop();
    if (running.kcp !== undefined) {
      const seconds = ((performance.now() - stopping) / 1000).toFixed(1);
      note(dim(`stopped in ${seconds}s`));
    }
  }
}

Deno.exit(await main(Deno.args));
