/**
 * The image build is hermetic: `scripts/build.sh install` is the only step
 * that needs the network; after it, `scripts/build.sh compile` works from
 * that cache alone, and from an empty cache it fails.
 *
 * The Containerfile's builder stage runs the same two steps on a copy of the
 * files it copies, so what is run here is what the image build runs. `deno
 * compile` downloads its runtime (denort), which this machine and CI cannot,
 * so the compile step runs with `BUILD_SMOKE=1`: `deno check` and `--help` of
 * each entrypoint, with the compile's own flags.
 */
import assert from "node:assert/strict";
import { type CommandResult, runCommand } from "../testing/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** What the Containerfile's builder stage copies from the build context. */
const SOURCES = [
  "deno.json",
  "deno.lock",
  "scripts/build.sh",
  "controller.ts",
  "webhook.ts",
  "lib/",
];

/** A command's exit code and the tails of its output, for a failure. */
function describeResult(result: CommandResult): string {
  return `exit code ${result.code}\nstdout:\n${
    result.stdout.slice(-2000)
  }\nstderr:\n${result.stderr.slice(-4000)}`;
}

interface Isolation {
  name: string;
  wrap(argv: string[]): string[];
  env: Record<string, string>;
}

/**
 * A network namespace with no interfaces, else (where `unshare --net` is
 * missing or not permitted, as in some containers) a proxy that refuses all.
 */
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

Deno.test("the Containerfile runs scripts/build.sh on the files it copies, with the pinned Deno, and ships both binaries on distroless as non-root", async () => {
  const containerfile = await Deno.readTextFile(`${ROOT}Containerfile`);
  const copied = containerfile.split("\n")
    .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
    .flatMap((line) => line.split(/\s+/).slice(1, -1));
  assert.deepEqual(copied.sort(), [...SOURCES].sort());
  assert.match(containerfile, /^RUN bash scripts\/build\.sh install$/m);
  assert.match(containerfile, /^RUN bash scripts\/build\.sh compile \/out$/m);

  const pinned = /^version="([^"]+)"$/m.exec(
    await Deno.readTextFile(`${ROOT}scripts/deno.sh`),
  )?.[1];
  assert.ok(pinned, "scripts/deno.sh pins no version");
  assert.match(containerfile, new RegExp(`^ARG DENO_VERSION=${pinned}$`, "m"));
  assert.match(
    containerfile,
    /^FROM docker\.io\/denoland\/deno:debian-\$\{DENO_VERSION\} AS build$/m,
  );
  assert.equal(
    Deno.version.deno,
    pinned,
    "run this test with scripts/deno.sh: the build proves nothing for another Deno",
  );

  assert.match(
    containerfile,
    /^FROM gcr\.io\/distroless\/cc-debian12:nonroot$/m,
  );
  assert.match(
    containerfile,
    /^COPY --from=build \/out\/controller \/out\/webhook \/usr\/local\/bin\/$/m,
  );
  assert.match(containerfile, /^USER 65532:65532$/m);
});

Deno.test("scripts/build.sh from a cold DENO_DIR: after `install`, `compile` needs no network; from an empty DENO_DIR it fails", async () => {
  const isolation = await networkIsolation();
  console.log(`network isolation: ${isolation.name}`);
  const tmp = await Deno.makeTempDir({ prefix: "hermetic-build-" });
  try {
    const env = { NO_COLOR: "1", KUBECONFIG: "", DENO_BIN: Deno.execPath() };
    /** Runs `argv` with no network, in smoke mode, with `denoDir` as cache. */
    const offline = (denoDir: string, argv: string[]) => {
      const [program, ...args] = isolation.wrap(argv);
      return runCommand(program!, args, {
        env: { ...env, ...isolation.env, BUILD_SMOKE: "1", DENO_DIR: denoDir },
      });
    };

    // The isolation really cuts the registry `install` reaches.
    const registry = Deno.env.get("NPM_CONFIG_REGISTRY") ??
      "https://registry.npmjs.org/";
    const probe = await offline(`${tmp}/probe-deno-dir`, [
      Deno.execPath(),
      "eval",
      `try { await fetch(${
        JSON.stringify(registry)
      }); console.log("reachable"); } catch { console.log("unreachable"); }`,
    ]);
    assert.equal(probe.stdout.trim(), "unreachable", describeResult(probe));

    // The build context: only what the Containerfile copies.
    const src = `${tmp}/src`;
    await Deno.mkdir(src);
    const copy = await runCommand("cp", ["-R", "--parents", ...SOURCES, src], {
      cwd: ROOT,
    });
    assert.equal(copy.code, 0, describeResult(copy));
    const script = `${src}/scripts/build.sh`;

    const denoDir = `${tmp}/deno-dir`;
    const install = await runCommand("bash", [script, "install"], {
      env: { ...env, DENO_DIR: denoDir },
    });
    assert.equal(install.code, 0, describeResult(install));

    const compile = ["bash", script, "compile", `${tmp}/out`];
    const built = await offline(denoDir, compile);
    assert.equal(built.code, 0, describeResult(built));
    assert.match(
      built.stdout,
      /^Usage: controller(\s|$)/m,
      describeResult(built),
    );
    assert.match(built.stdout, /^Usage: webhook(\s|$)/m, describeResult(built));

    // Negative control: the same step without the cache fails.
    const cold = await offline(`${tmp}/empty-deno-dir`, compile);
    assert.notEqual(cold.code, 0, describeResult(cold));
    assert.match(cold.stderr, /--cached-only/, describeResult(cold));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
