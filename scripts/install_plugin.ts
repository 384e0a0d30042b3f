/**
 * `deno task plugin:install`: installs `kubectl dependencies` so that it
 * runs without the checkout and without `deno` on the `PATH`.
 *
 * It bundles the plugin and everything it imports into one JavaScript file
 * (`deno bundle`), `<data>/kubectl-dependencies.js`, and writes a launcher,
 * `<root>/bin/kubectl-dependencies`, that runs that file with the absolute
 * path of the Deno that installed it and the plugin's permissions only:
 * {@linkcode PLUGIN_PERMISSIONS}, nothing written. `<root>` is
 * `--root`, else `$DENO_INSTALL_ROOT`, else `~/.deno` (where
 * `deno install -g` puts programs); `<data>` is `--data`, else
 * `${XDG_DATA_HOME:-~/.local/share}/kubectl-dependencies`.
 *
 * ```sh
 * bash scripts/deno.sh task plugin:install
 * export PATH="$HOME/.deno/bin:$PATH"
 * kubectl dependencies help
 * ```
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The plugin's permissions: its kubeconfig's server, reading files, its variables. */
export const PLUGIN_PERMISSIONS: readonly string[] = [
  "--allow-net",
  "--allow-read",
  "--allow-env=KUBECONFIG,HOME,NO_COLOR,LOG_TOKENS,LOG_STREAM",
];

/** The launcher's name, as kubectl finds plugins: `kubectl-<command>`. */
export const PLUGIN_NAME = "kubectl-dependencies";

/** Where the plugin is installed. */
export interface InstallPlaces {
  /** The launcher's root: the launcher is `<root>/bin/kubectl-dependencies`. */
  root: string;
  /** The directory of the bundle. */
  data: string;
}

/** What {@linkcode installPlugin} installs, and with what. */
export interface InstallOptions extends InstallPlaces {
  /** The Deno that bundles and, later, runs the plugin: an absolute path. */
  deno: string;
  /** The checkout: its `deno.json` and `kubectl_dependencies.ts`. */
  checkout: string;
}

/** What was installed, where. */
export interface Installed {
  /** The launcher kubectl runs. */
  launcher: string;
  /** The plugin's code, one file. */
  bundle: string;
}

/**
 * The install places from the flags (`--root=<dir>`, `--data=<dir>`) and
 * the environment (`DENO_INSTALL_ROOT`, `XDG_DATA_HOME`, `HOME`).
 *
 * @throws {Error} On an unknown argument, or no `HOME` to default from.
 */
export function installPlaces(
  args: readonly string[],
  env: (name: string) => string | undefined,
): InstallPlaces {
  const flags = new Map<string, string>();
  for (const arg of args) {
    const match = /^--(root|data)=(.+)$/.exec(arg);
    if (match === null) {
      throw new Error(
        `unknown argument ${
          JSON.stringify(arg)
        }: only --root=<dir> and --data=<dir>`,
      );
    }
    flags.set(match[1]!, resolve(match[2]!));
  }
  const home = () => {
    const value = env("HOME");
    if (value === undefined || value === "") {
      throw new Error(
        "HOME is not set: give --root=<dir> and --data=<dir> to say where to install",
      );
    }
    return value;
  };
  const root = flags.get("root") ?? nonEmpty(env("DENO_INSTALL_ROOT")) ??
    join(home(), ".deno");
  const data = flags.get("data") ??
    join(
      nonEmpty(env("XDG_DATA_HOME")) ?? join(home(), ".local", "share"),
      PLUGIN_NAME,
    );
  return { root, data };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** `text` as one word of a POSIX shell, whatever it holds. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The launcher: a POSIX shell script that runs `bundle` with `deno` and
 * the plugin's permissions, ignoring any `deno.json` where it runs, or
 * says in one line to install again when that Deno is gone.
 */
export function launcherScript(
  paths: { deno: string; bundle: string },
): string {
  return [
    "#!/bin/sh",
    "# kubectl dependencies, written by `deno task plugin:install`",
    "# (scripts/install_plugin.ts): its bundle, run with the Deno that installed it.",
    `deno=${shellQuote(paths.deno)}`,
    `bundle=${shellQuote(paths.bundle)}`,
    'if [ ! -x "$deno" ] || [ ! -f "$bundle" ]; then',
    `  echo "${PLUGIN_NAME}: cannot run $bundle with $deno, the Deno that installed it: install it again (deno task plugin:install)" >&2`,
    "  exit 2",
    "fi",
    `exec "$deno" run --no-config ${
      PLUGIN_PERMISSIONS.join(" ")
    } "$bundle" "$@"`,
    "",
  ].join("\n");
}

/**
 * Bundles the plugin into `<data>/kubectl-dependencies.js` and writes the
 * launcher `<root>/bin/kubectl-dependencies`, each replaced whole (written
 * beside, then renamed). Removes what an earlier `deno install -g` of the
 * plugin left beside the launcher.
 *
 * @throws {Error} When bundling fails (with Deno's message), or a file
 * cannot be written.
 */
export async function installPlugin(
  options: InstallOptions,
): Promise<Installed> {
  const bin = join(options.root, "bin");
  await Deno.mkdir(options.data, { recursive: true });
  await Deno.mkdir(bin, { recursive: true });
  const bundle = join(options.data, `${PLUGIN_NAME}.js`);
  // Bundled beside, then renamed: a `.js` name, or the bundle has no
  // `require` for the npm packages it holds.
  const bundling = join(options.data, `${PLUGIN_NAME}.new.js`);
  const launcher = join(bin, PLUGIN_NAME);
  const bundled = await new Deno.Command(options.deno, {
    args: [
      "bundle",
      "--quiet",
      "--platform=deno",
      "--config",
      join(options.checkout, "deno.json"),
      "--output",
      bundling,
      join(options.checkout, "kubectl_dependencies.ts"),
    ],
    cwd: options.checkout,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!bundled.success) {
    const said = new TextDecoder().decode(bundled.stderr).trim();
    throw new Error(
      `cannot bundle the plugin: ${said || "deno bundle failed"}`,
    );
  }
  await Deno.rename(bundling, bundle);
  await Deno.writeTextFile(
    `${launcher}.new`,
    launcherScript({ deno: options.deno, bundle }),
    { mode: 0o755 },
  );
  await Deno.chmod(`${launcher}.new`, 0o755);
  await Deno.rename(`${launcher}.new`, launcher);
  // `deno install -g` kept a copy of the configuration beside its shim.
  await Deno.remove(join(bin, `.${PLUGIN_NAME}`), { recursive: true })
    .catch(() => {});
  return { launcher, bundle };
}

if (import.meta.main) {
  try {
    const places = installPlaces(Deno.args, (name) => Deno.env.get(name));
    const deno = Deno.execPath();
    const checkout = resolve(dirname(fileURLToPath(import.meta.url)), "..");
    const installed = await installPlugin({ ...places, deno, checkout });
    const bin = dirname(installed.launcher);
    const path = (Deno.env.get("PATH") ?? "").split(":");
    console.log(
      [
        `installed ${installed.launcher}: it runs ${installed.bundle} with ${deno}`,
        ...(path.includes(bin)
          ? []
          : [`put ${bin} on your PATH: export PATH="${bin}:$PATH"`]),
        "then: kubectl dependencies help",
      ].join("\n"),
    );
  } catch (error) {
    console.error(
      `plugin:install: ${error instanceof Error ? error.message : error}`,
    );
    Deno.exit(1);
  }
}
