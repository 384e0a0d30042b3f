import assert from "node:assert/strict";
import {
  chromiumExecutable,
  FULL_CHROMIUM_PATH,
  HEADLESS_SHELL_PATH,
  launchBrowser,
} from "./browser.ts";

Deno.test("chromiumExecutable() takes CHROMIUM_PATH first, then the first candidate that exists", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const present = `${dir}/chromium`;
    await Deno.writeTextFile(present, "");
    const env = (value?: string) => ({
      env: (name: string) => name === "CHROMIUM_PATH" ? value : undefined,
    });
    assert.equal(
      chromiumExecutable({ ...env("/opt/chrome"), candidates: [present] }),
      "/opt/chrome",
    );
    assert.equal(
      chromiumExecutable({ ...env(), candidates: [`${dir}/none`, present] }),
      present,
    );
    assert.throws(
      () => chromiumExecutable({ ...env(), candidates: [`${dir}/none`] }),
      /^Error: Cannot find Chromium: neither .* exists \(apt-get install chromium-headless-shell, or set CHROMIUM_PATH\)$/,
    );
    assert.match(
      `${HEADLESS_SHELL_PATH} ${FULL_CHROMIUM_PATH}`,
      /^\/usr\/bin\/chromium-headless-shell \/usr\/bin\/chromium$/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("launchBrowser() renders a page in headless Chromium and removes its profile on close", async () => {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.setContent("<p id='x'>hello</p>");
    assert.equal(
      await page.$eval(
        "#x",
        (p) => (p as { textContent: string }).textContent,
      ),
      "hello",
    );
    assert.deepEqual(page.viewport(), {
      width: 1200,
      height: 800,
    });
  } finally {
    await browser.close();
  }
  await assert.rejects(Deno.stat(browser.userDataDir), Deno.errors.NotFound);
});
