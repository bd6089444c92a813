// Runs the proof page's step logic (pipelines/proofs_html/assets/verify.js) under Node:
// argv[2] is the path of verify.js; stdin is a JSON list of {text, key} (a bundle file's text
// and a trusted key) or {normalize} (a text for step 3's normalisation); stdout is the JSON
// list of their results ({steps, holds}, or the normalised text).
"use strict";
const verify = require(require("path").resolve(process.argv[2]));
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const results = [];
  for (const { text, key, normalize } of JSON.parse(input)) {
    if (normalize !== undefined) {
      results.push(verify.normalize(normalize));
      continue;
    }
    const { steps, holds } = await verify.verifyBundle(text, key || "");
    results.push({ steps, holds });
  }
  process.stdout.write(JSON.stringify(results));
});
