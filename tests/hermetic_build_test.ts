/**
 * The image build is hermetic: the Containerfile's builder stage, replayed
 * here from a cold DENO_DIR, needs the network only for its `deno install`
 * step; after it, every entrypoint that a `deno compile` line builds starts
 * from that cache alone, with `--frozen --cached-only` and no network.
 *
 * The image itself cannot be built on this machine or in CI (`deno compile`
 * downloads its runtime, denort, from dl.deno.land), so everything here is
 * read from the Containerfile: which files the builder copies and where, the
 * install and compile commands with their flags, the runtime stage. When the
 * Containerfile drifts (a file not copied, a flag dropped, a third entrypoint,
 * an instruction this test does not model), a test fails.
 */
import assert from "node:assert/strict";
import { basename, posix } from "node:path";
import {
  type BuildStep,
  checkArgs,
  type CommandResult,
  compiles,
  copiesFrom,
  loadContainerfile,
  nameOf,
  runArgs,
  runCommand,
} from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO_SH = `${ROOT}scripts/deno.sh`;
/** What the image ships: one `deno compile` per entrypoint. */
const ENTRYPOINTS = ["controller.ts", "webhook.ts"];

// ---------------------------------------------------------------------------
// Replay helpers

interface Result extends CommandResult {
  argv: string[];
}

async function exec(
  argv: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<Result> {
  const [program, ...args] = argv;
  const result = await runCommand(program!, args, {
    cwd,
    env: { NO_COLOR: "1", KUBECONFIG: "", ...env },
  });
  return { argv, ...result };
}

function describe(result: Result): string {
  return [
    `$ ${result.argv.join(" ")}`,
    `exit code ${result.code}`,
    `stdout:\n${result.stdout.slice(-2000)}`,
    `stderr:\n${result.stderr.slice(-4000)}`,
  ].join("\n");
}

interface Isolation {
  name: string;
  wrap(argv: string[]): string[];
  env: Record<string, string>;
}

/** A network namespace with no interfaces, else a proxy that refuses all. */
async function networkIsolation(): Promise<Isolation> {
  try {
    const { code } = await runCommand("unshare", ["--net", "--", "true"]);
    if (code === 0) {
      return {
        name: "unshare --net (empty network namespace)",
        wrap: (argv) => ["unshare", "--net", "--", ...argv],
        env: {},
      };
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const proxy = "http://127.0.0.1:9";
  return {
    name: `HTTP(S)_PROXY=${proxy} (unshare --net is not usable here)`,
    wrap: (argv) => argv,
    env: {
      HTTPS_PROXY: proxy,
      HTTP_PROXY: proxy,
      https_proxy: proxy,
      http_proxy: proxy,
      NO_PROXY: "",
      no_proxy: "",
    },
  };
}

/** Copies a file, symlink or directory tree (contents and all). */
async function copyTree(source: string, target: string): Promise<void> {
  const info = await Deno.lstat(source);
  if (info.isDirectory) {
    await Deno.mkdir(target, { recursive: true });
    for await (const entry of Deno.readDir(source)) {
      await copyTree(`${source}/${entry.name}`, `${target}/${entry.name}`);
    }
    return;
  }
  await Deno.mkdir(posix.dirname(target), { recursive: true });
  if (info.isSymlink) {
    await Deno.symlink(await Deno.readLink(source), target);
  } else {
    await Deno.copyFile(source, target);
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Docker's COPY from the build context (the project root) into `rootfs`. */
async function applyCopy(
  step: Extract<BuildStep, { kind: "copy" }>,
  rootfs: string,
): Promise<void> {
  const dest = posix.resolve(step.workdir, step.dest);
  const destIsDirectory = step.dest.endsWith("/") ||
    step.sources.length > 1 || await isDirectory(`${rootfs}${dest}`);
  for (const source of step.sources) {
    if (/[*?[\]]/.test(source)) {
      throw new Error(`COPY ${source}: wildcards are not modelled`);
    }
    const relative = posix.normalize(source).replace(/^\/+/, "");
    if (relative === ".." || relative.startsWith("../")) {
      throw new Error(`COPY ${source} leaves the build context`);
    }
    const from = `${ROOT}${relative === "." ? "" : relative}`;
    if (await isDirectory(from)) {
      await copyTree(from, `${rootfs}${dest}`);
    } else {
      await Deno.stat(from); // a missing source fails the build
      await copyTree(
        from,
        destIsDirectory
          ? `${rootfs}${dest}/${posix.basename(relative)}`
          : `${rootfs}${dest}`,
      );
    }
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

// ---------------------------------------------------------------------------
// Tests

Deno.test("Containerfile builder stage: COPY lines, one frozen `deno install`, and a frozen cached-only `deno compile` per entrypoint", async () => {
  const containerfile = await loadContainerfile();
  const { steps } = containerfile.builder;
  const copies = steps.flatMap((s) => s.kind === "copy" ? s.sources : []);
  assert.ok(copies.length > 0, "the builder stage copies nothing");
  const install = steps.flatMap((s) => s.kind === "install" ? [s.argv] : []);
  assert.equal(install.length, 1);
  assert.ok(
    install[0]!.includes("--frozen"),
    "`deno install` must be --frozen so the lockfile alone decides",
  );
  const commands = compiles(containerfile);
  assert.deepEqual(
    commands.map((c) => c.entrypoint).sort(),
    ENTRYPOINTS,
    "the compile commands must cover exactly the shipped entrypoints",
  );
  const outputs = commands.map((c) => c.output);
  assert.equal(new Set(outputs).size, outputs.length, "duplicate --output");
  for (const command of commands) {
    const names = command.flags.map(nameOf);
    for (const flag of ["--frozen", "--cached-only"]) {
      assert.ok(
        names.includes(flag),
        `deno compile ${command.entrypoint} lacks ${flag}`,
      );
    }
    assert.ok(
      command.permissions.length > 0,
      `deno compile ${command.entrypoint} grants no permissions`,
    );
    assert.deepEqual(command.scriptArgs, []);
  }
});

Deno.test("Containerfile runtime stage: distroless, non-root, with both compiled binaries from the builder stage", async () => {
  const containerfile = await loadContainerfile();
  const { runtime, builder } = containerfile;
  assert.notEqual(runtime.line, builder.line, "the builder is the last stage");
  assert.match(runtime.image, /(^|\/)distroless\//);
  const users = runtime.instructions.filter((i) => i.keyword === "USER");
  const tag = /:([^:/@]+)(@.*)?$/.exec(runtime.image)?.[1] ?? "latest";
  if (users.length > 0) {
    const user = users.at(-1)!.args.split(":")[0]!;
    assert.ok(
      /^[1-9][0-9]*$/.test(user) || user === "nonroot",
      `USER ${users.at(-1)!.args} is not a non-root user`,
    );
  } else {
    assert.ok(
      tag === "nonroot" || tag.endsWith("-nonroot"),
      `no USER and ${runtime.image} is not a :nonroot tag`,
    );
  }
  const copied = copiesFrom(runtime).flatMap((c) => c.sources);
  for (const command of compiles(containerfile)) {
    assert.ok(
      copied.includes(command.output),
      `the runtime stage does not copy ${command.output} (${command.entrypoint})`,
    );
  }
});

Deno.test("Containerfile builder stage uses the Deno version scripts/deno.sh pins, which runs this test", async () => {
  const containerfile = await loadContainerfile();
  const pinned = /^version="([^"]+)"$/m.exec(
    await Deno.readTextFile(DENO_SH),
  )?.[1];
  assert.ok(pinned, "scripts/deno.sh pins no version");
  const declared = [
    containerfile.globalArgs.get("DENO_VERSION"),
    ...containerfile.builder.args.has("DENO_VERSION")
      ? [containerfile.builder.args.get("DENO_VERSION")]
      : [],
  ];
  for (const version of declared) {
    assert.equal(version, pinned, "ARG DENO_VERSION differs from deno.sh");
  }
  assert.match(
    containerfile.builder.image,
    new RegExp(
      `^(docker\\.io/)?denoland/deno:([a-z0-9]+-)?${
        pinned.replaceAll(".", "\\.")
      }$`,
    ),
  );
  assert.equal(
    Deno.version.deno,
    pinned,
    "run this test with scripts/deno.sh: the replay proves nothing for another Deno",
  );
});

Deno.test("Containerfile builder stage replayed from a cold DENO_DIR: after `deno install`, each compiled entrypoint prints its usage with no network; an empty DENO_DIR cannot", async () => {
  const containerfile = await loadContainerfile();
  for (const ignore of [".dockerignore", ".containerignore"]) {
    await assert.rejects(
      Deno.stat(`${ROOT}${ignore}`),
      Deno.errors.NotFound,
      `${ignore} shapes the build context; this test does not model it`,
    );
  }
  const deno = Deno.execPath();
  const isolation = await networkIsolation();
  console.log(`network isolation: ${isolation.name}`);
  const tmp = await Deno.makeTempDir({ prefix: "hermetic-build-" });
  try {
    const rootfs = `${tmp}/rootfs`;
    const denoDir = `${tmp}/deno-dir`;
    await Deno.mkdir(denoDir);

    // The isolation really cuts the registry `deno install` reaches.
    const registry = Deno.env.get("NPM_CONFIG_REGISTRY") ??
      "https://registry.npmjs.org/";
    const probe = await exec(
      isolation.wrap([
        deno,
        "eval",
        `try { await fetch(${
          JSON.stringify(registry)
        }); console.log("reachable"); } catch { console.log("unreachable"); }`,
      ]),
      tmp,
      { DENO_DIR: `${tmp}/probe-deno-dir`, ...isolation.env },
    );
    assert.equal(probe.stdout.trim(), "unreachable", describe(probe));

    let offlineRuns = 0;
    for (const [index, step] of containerfile.builder.steps.entries()) {
      const cwd = `${rootfs}${step.workdir}`;
      await Deno.mkdir(cwd, { recursive: true });
      const started = performance.now();
      if (step.kind === "copy") {
        await applyCopy(step, rootfs);
        continue;
      }
      if (step.kind === "install") {
        const install = await exec([deno, ...step.argv], cwd, {
          DENO_DIR: denoDir,
        });
        assert.equal(install.code, 0, describe(install));
        console.log(
          `deno ${step.argv.join(" ")} (network): ${
            seconds(performance.now() - started)
          }`,
        );
        continue;
      }
      const { compile } = step;
      const name = basename(compile.entrypoint, ".ts");
      const offline = (dir: string, argv: string[]) =>
        exec(isolation.wrap([deno, ...argv]), cwd, {
          DENO_DIR: dir,
          ...isolation.env,
        });

      const warm = await offline(denoDir, runArgs(compile, ["--help"]));
      assert.equal(warm.code, 0, describe(warm));
      assert.match(
        warm.stdout,
        new RegExp(`^Usage: ${name}(\\s|$)`),
        describe(warm),
      );
      const check = checkArgs(compile);
      if (check !== undefined) {
        const checked = await offline(denoDir, check);
        assert.equal(checked.code, 0, describe(checked));
      }
      console.log(
        `${compile.entrypoint}: deno run --help${
          check ? " and deno check" : ""
        } offline: ${seconds(performance.now() - started)}`,
      );

      // Negative control: the same run without the cache must fail.
      const emptyDir = `${tmp}/empty-deno-dir-${index}`;
      await Deno.mkdir(emptyDir);
      const cold = await offline(emptyDir, runArgs(compile, ["--help"]));
      assert.notEqual(cold.code, 0, describe(cold));
      assert.match(cold.stderr, /--cached-only/, describe(cold));
      offlineRuns++;
    }
    assert.equal(offlineRuns, compiles(containerfile).length);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
