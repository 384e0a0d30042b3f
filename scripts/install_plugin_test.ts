import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  installPlaces,
  launcherScript,
  PLUGIN_PERMISSIONS,
  shellQuote,
} from "./install_plugin.ts";

const CHECKOUT = fileURLToPath(new URL("../", import.meta.url));

Deno.test("installPlaces() takes the flags, else DENO_INSTALL_ROOT and XDG_DATA_HOME, else HOME's", () => {
  const env = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.deepEqual(installPlaces([], env({ HOME: "/home/u" })), {
    root: "/home/u/.deno",
    data: "/home/u/.local/share/kubectl-dependencies",
  });
  assert.deepEqual(
    installPlaces(
      [],
      env({
        HOME: "/home/u",
        DENO_INSTALL_ROOT: "/opt/deno",
        XDG_DATA_HOME: "/data",
      }),
    ),
    { root: "/opt/deno", data: "/data/kubectl-dependencies" },
  );
  assert.deepEqual(
    installPlaces(["--root=/r", "--data=/d"], env({ DENO_INSTALL_ROOT: "/x" })),
    { root: "/r", data: "/d" },
  );
  assert.deepEqual(
    installPlaces(
      [],
      env({ HOME: "/h", DENO_INSTALL_ROOT: "", XDG_DATA_HOME: "" }),
    ),
    { root: "/h/.deno", data: "/h/.local/share/kubectl-dependencies" },
  );
  assert.throws(
    () => installPlaces([], env({})),
    /HOME is not set: give --root/,
  );
  assert.throws(
    () => installPlaces(["--force"], env({ HOME: "/h" })),
    /unknown argument "--force": only --root=<dir> and --data=<dir>/,
  );
});

Deno.test("launcherScript() runs the bundle with the installing Deno, the plugin's permissions only, any path quoted", () => {
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  const script = launcherScript({
    deno: "/opt/my deno/deno",
    bundle: "/home/o'brien/kubectl-dependencies.js",
  });
  assert.match(script, /^#!\/bin\/sh\n/);
  assert.match(script, /^deno='\/opt\/my deno\/deno'$/m);
  assert.match(
    script,
    /^bundle='\/home\/o'\\''brien\/kubectl-dependencies\.js'$/m,
  );
  assert.match(
    script,
    new RegExp(
      `^exec "\\$deno" run --no-config ${
        PLUGIN_PERMISSIONS.join(" ")
      } "\\$bundle" "\\$@"$`,
      "m",
    ),
  );
  assert.doesNotMatch(script, /--allow-write|--allow-run|--allow-all|-A /);
});

Deno.test("the launcher says in one line to install again when its Deno is gone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "plugin-launcher-" });
  try {
    const launcher = join(dir, "kubectl-dependencies");
    await Deno.writeTextFile(
      launcher,
      launcherScript({ deno: `${dir}/gone/deno`, bundle: `${dir}/x.js` }),
      { mode: 0o755 },
    );
    const ran = await new Deno.Command(launcher, {
      args: ["help"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(ran.code, 2);
    assert.equal(
      new TextDecoder().decode(ran.stderr),
      `kubectl-dependencies: cannot run ${dir}/x.js with ${dir}/gone/deno, the Deno that installed it: install it again (deno task plugin:install)\n`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task plugin:install installs a plugin that runs without deno on the PATH and without the checkout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "plugin-install-" });
  try {
    const root = join(dir, "root");
    const data = join(dir, "share", "kubectl-dependencies");
    const home = join(dir, "home");
    await Deno.mkdir(home);
    const installed = await new Deno.Command(Deno.execPath(), {
      args: ["task", "plugin:install", `--root=${root}`, `--data=${data}`],
      cwd: CHECKOUT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const said = new TextDecoder().decode(installed.stdout);
    assert.equal(
      installed.code,
      0,
      `${said}${new TextDecoder().decode(installed.stderr)}`,
    );
    const launcher = join(root, "bin", "kubectl-dependencies");
    const bundle = join(data, "kubectl-dependencies.js");
    assert.match(said, new RegExp(`^installed ${launcher}: it runs ${bundle}`));
    // Nothing installed refers to the checkout.
    assert.ok(!(await Deno.readTextFile(launcher)).includes(CHECKOUT));
    assert.ok(
      !(await Deno.readTextFile(bundle)).includes(`file://${CHECKOUT}`),
    );
    // Run as kubectl would, from elsewhere, with a PATH that has no deno.
    const path = "/usr/bin:/bin";
    const noDeno = await new Deno.Command("/bin/sh", {
      args: ["-c", "command -v deno"],
      clearEnv: true,
      env: { PATH: path },
    }).output();
    assert.notEqual(noDeno.code, 0, "deno is on the test's PATH");
    const ran = await new Deno.Command(launcher, {
      args: ["--help"],
      cwd: home,
      clearEnv: true,
      env: { PATH: path, HOME: home },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(ran.code, 0, new TextDecoder().decode(ran.stderr));
    assert.match(
      new TextDecoder().decode(ran.stdout),
      /^Usage: kubectl dependencies <command> \[flags\]/,
    );
    // Its permissions are the plugin's: no kubeconfig here, and it says so.
    const why = await new Deno.Command(launcher, {
      args: ["why", "vpc/x"],
      cwd: home,
      clearEnv: true,
      env: { PATH: path, HOME: home },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(why.code, 2);
    assert.match(
      new TextDecoder().decode(why.stderr),
      /^error: no kubeconfig at .*--kubeconfig=<file> or the KUBECONFIG variable\n$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
