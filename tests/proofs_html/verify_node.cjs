// Runs the proof page's step logic (pipelines/proofs_html/assets/verify.js) under Node:
// argv[2] is the path of verify.js; stdin is a JSON list of {text, key}; stdout is the JSON
// list of their results ({steps, holds}).
"use strict";
const verify = require(require("path").resolve(process.argv[2]));
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const results = [];
  for (const { text, key } of JSON.parse(input)) {
    const { steps, holds } = await verify.verifyBundle(text, key || "");
    results.push({ steps, holds });
  }
  process.stdout.write(JSON.stringify(results));
});
