/**
 * A headless Chromium for tests that look at a page as a browser renders
 * it: Debian's `chromium-headless-shell` (or `chromium`), driven with
 * puppeteer-core, which downloads no browser. `CHROMIUM_PATH` names another
 * executable. Each launch has a fresh profile in a temporary directory,
 * removed when the browser closes.
 *
 * ```ts ignore
 * import { launchBrowser } from "./browser.ts";
 *
 * const browser = await launchBrowser();
 * try {
 *   const page = await browser.newPage();
 *   await page.goto("http://127.0.0.1:8080/graph");
 * } finally {
 *   await browser.close();
 * }
 * ```
 *
 * @module
 */
import puppeteer, { type Page } from "puppeteer-core";

/** Where Debian installs the headless shell, the first choice. */
export const HEADLESS_SHELL_PATH = "/usr/bin/chromium-headless-shell";
/** Where Debian installs the full browser, the fallback. */
export const FULL_CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * The command-line switches of every launch: no sandbox (tests run in
 * containers without user namespaces), no GPU, and nothing that reaches
 * the network on its own (updates, sync, QUIC probes).
 */
export const CHROMIUM_ARGS: readonly string[] = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

/**
 * The Chromium to launch: `CHROMIUM_PATH` when set, else the first of
 * `candidates` that exists (the headless shell, then the full browser).
 *
 * @throws {Error} Naming what was looked for when none of them exists.
 */
export function chromiumExecutable(
  options: {
    env?: (name: string) => string | undefined;
    candidates?: readonly string[];
  } = {},
): string {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  const chosen = env("CHROMIUM_PATH");
  if (chosen) return chosen;
  const candidates = options.candidates ??
    [HEADLESS_SHELL_PATH, FULL_CHROMIUM_PATH];
  for (const path of candidates) {
    if (isFile(path)) return path;
  }
  throw new Error(
    `Cannot find Chromium: neither ${HEADLESS_SHELL_PATH} nor ${FULL_CHROMIUM_PATH} exists (apt-get install chromium-headless-shell, or set CHROMIUM_PATH)`,
  );
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** A launched browser; {@linkcode TestBrowser.close} also removes its profile. */
export interface TestBrowser {
  /** The executable launched. */
  executable: string;
  /** A new tab with the viewport of the launch. */
  newPage(): Promise<Page>;
  /** The profile directory, removed on close. */
  userDataDir: string;
  /** Closes the browser and removes its profile directory. */
  close(): Promise<void>;
}

/** Options for {@linkcode launchBrowser}. */
export interface LaunchBrowserOptions {
  /** The tabs' viewport. @default {{width: 1200, height: 800}} */
  viewport?: { width: number; height: number };
  /** The executable. @default {chromiumExecutable()} */
  executable?: string;
}

/**
 * Launches headless Chromium with {@linkcode CHROMIUM_ARGS} and a fresh
 * profile directory: in the old headless mode (`"shell"`) for the headless
 * shell, in the new one for a full browser.
 */
export async function launchBrowser(
  options: LaunchBrowserOptions = {},
): Promise<TestBrowser> {
  const executable = options.executable ?? chromiumExecutable();
  const viewport = options.viewport ?? { width: 1200, height: 800 };
  const userDataDir = await Deno.makeTempDir({ prefix: "chromium-profile-" });
  const shell = executable.includes("headless-shell");
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: executable,
      headless: shell ? "shell" : true,
      userDataDir,
      args: [...CHROMIUM_ARGS],
      defaultViewport: viewport,
    });
  } catch (error) {
    await Deno.remove(userDataDir, { recursive: true }).catch(() => {});
    throw error;
  }
  let closed: Promise<void> | undefined;
  return {
    executable,
    userDataDir,
    newPage: () => browser.newPage(),
    close: () =>
      closed ??= (async () => {
        try {
          await browser.close();
        } finally {
          await Deno.remove(userDataDir, { recursive: true }).catch(() => {});
        }
      })(),
  };
}
