// deno-lint-ignore-file no-control-regex
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { jsonText, yamlText } from "./why_data.ts";

/** Every character that must not reach a terminal as it is. */
const RAW =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

Deno.test("jsonText() and yamlText(): the same value back, no unsafe character as it is", () => {
  const value = {
    name: "a\u202eb\u001b[31m",
    list: ["\u0085x", "plain"],
    n: 3,
  };
  const json = jsonText(value);
  assert.ok(json.endsWith("\n"));
  assert.doesNotMatch(json, RAW);
  assert.deepEqual(JSON.parse(json), value);
  const yaml = yamlText(value);
  assert.doesNotMatch(yaml, RAW);
  assert.deepEqual(parseYaml(yaml), value);
});
