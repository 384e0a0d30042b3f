import assert from "node:assert/strict";
import { Interned } from "./interned.ts";

Deno.test("Interned shares one string per value and forgets it with its last holder", async (t) => {
  await t.step("intern() gives the first copy to every later holder", () => {
    const strings = new Interned();
    const first = ["team", "a"].join("-");
    const second = ["team", "a"].join("-");
    assert.equal(strings.intern(first), first);
    assert.equal(strings.intern(second), first);
    assert.equal(strings.count("team-a"), 2);
    assert.equal(strings.size, 1);
  });

  await t.step("release() counts down and forgets at zero", () => {
    const strings = new Interned();
    strings.intern("x");
    strings.intern("x");
    strings.intern("y");
    strings.release("x");
    assert.equal(strings.count("x"), 1);
    assert.equal(strings.size, 2);
    strings.release("x");
    assert.equal(strings.count("x"), 0);
    assert.equal(strings.size, 1);
    strings.release("x");
    strings.release("never");
    assert.equal(strings.count("x"), 0);
    assert.equal(strings.size, 1);
  });

  await t.step("odd strings are values like any other", () => {
    const strings = new Interned();
    for (const odd of ["", "\u0000", "__proto__", "constructor", "a\u0000b"]) {
      assert.equal(strings.intern(odd), odd);
      assert.equal(strings.count(odd), 1);
    }
    assert.equal(strings.size, 5);
    strings.clear();
    assert.equal(strings.size, 0);
    assert.equal(strings.count("__proto__"), 0);
  });

  await t.step("churn leaves nothing behind", () => {
    const strings = new Interned();
    for (let i = 0; i < 10_000; i++) {
      const s = strings.intern(`ns-${i % 7}`);
      strings.release(s);
    }
    assert.equal(strings.size, 0);
  });
});
