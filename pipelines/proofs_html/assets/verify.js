/* The six steps of a receipts proof bundle (format version 1), as docs/proof-page.md
 * describes them: format, snapshot, quote, entry, inclusion, checkpoint. Pure logic over
 * the bundle's text and the Web Crypto API (SHA-256, Ed25519); no network, no DOM. The same
 * file runs in the proof page and under Node (globalThis.crypto, Node 20 and later).
 *
 * verifyBundle(text, trustedKey) resolves to {steps, view}: steps is a list of
 * {step, status: "ok" | "failed" | "not run", reason}; view holds what the page shows (the
 * parsed bundle, the located string, the quote's code-point offsets and their UTF-16
 * indexes), as far as the steps got. It never throws: every failure is a step's reason. */
(function (root) {
  "use strict";

  const STEPS = ["format", "snapshot", "quote", "entry", "inclusion", "checkpoint"];
  const FORMAT = "receipts-proof-bundle";
  const ENTRY_HEADER = "receipts-log-entry v1";
  const PROOF_HEADER = "c2sp.org/tlog-proof@v1";
  const ED25519 = 0x01;

  class StepFailure extends Error {}
  function fail(reason) {
    throw new StepFailure(reason);
  }

  // ---- bytes and text -------------------------------------------------------------------

  // No group repeated: a regular expression that backtracks overflows the stack on the
  // megabytes of a snapshot.
  const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

  /** Standard base64 with padding (RFC 4648 section 4), strictly; null if it is not. */
  function base64Bytes(text) {
    if (typeof text !== "string" || text.length % 4 !== 0 || !B64.test(text)) return null;
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function hex(bytes) {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function equalBytes(a, b) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  function concat(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  const utf8 = (text) => new TextEncoder().encode(text);

  function subtle() {
    const api = root.crypto && root.crypto.subtle;
    if (!api) {
      fail(
        "Web Crypto is not available here: open the page from a file or an https:// address"
      );
    }
    return api;
  }

  async function sha256(bytes) {
    return new Uint8Array(await subtle().digest("SHA-256", bytes));
  }

  /** How many code points `text` has (its length counts UTF-16 units: a character
   * outside the Basic Multilingual Plane is two of them; a lone surrogate is one). */
  const countPoints = (text) => text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g) || []).length;

  /** The UTF-16 index of code point `n` of `text` (n at most its code point count). No
   * array of code points is made: a snapshot may be 64 MiB. */
  function unitIndex(text, n, from = 0, at = 0) {
    let i = from;
    for (let point = at; point < n; point++) {
      const unit = text.charCodeAt(i);
      const pair = unit >= 0xd800 && unit <= 0xdbff && /[\uDC00-\uDFFF]/.test(text.charAt(i + 1));
      i += pair ? 2 : 1;
    }
    return i;
  }

  // ---- step 1: format -------------------------------------------------------------------

  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isInt = (v) => typeof v === "number" && Number.isInteger(v);
  const TYPES = {
    string: (v) => typeof v === "string",
    "string or null": (v) => v === null || typeof v === "string",
    integer: isInt,
    object: isObject,
    "object or null": (v) => v === null || isObject(v),
  };
  // Every required field of a version 1 bundle with its JSON type (bundle-format, "format").
  const FIELDS = [
    ["format", "string"],
    ["version", "integer"],
    ["document", "object"],
    ["document.doc_id", "string"],
    ["document.revision", "integer"],
    ["document.kind", "string"],
    ["document.source", "string"],
    ["document.title", "string or null"],
    ["snapshot", "object"],
    ["snapshot.content_hash", "string"],
    ["snapshot.canonical_form", "string"],
    ["snapshot.media_type", "string"],
    ["snapshot.size", "integer"],
    ["snapshot.bytes_base64", "string"],
    ["quote", "object"],
    ["quote.text", "string"],
    ["quote.exact", "string"],
    ["quote.locator", "object"],
    ["quote.locator.pointer", "string or null"],
    ["quote.locator.start", "integer"],
    ["quote.locator.end", "integer"],
    ["quote.prefix", "string"],
    ["quote.suffix", "string"],
    ["citation", "object"],
    ["citation.url", "string"],
    ["citation.captured_at", "string"],
    ["citation.robust_links", "object"],
    ["citation.robust_links.data-originalurl", "string"],
    ["citation.robust_links.data-versionurl", "string or null"],
    ["citation.robust_links.data-versiondate", "string"],
    ["log", "object"],
    ["log.entry", "string"],
    ["log.proof", "string"],
    ["log.verifier_key", "string"],
    ["claim", "object or null"],
  ];

  function checkFormat(text) {
    let bundle;
    try {
      bundle = JSON.parse(text);
    } catch (error) {
      fail(`not JSON (${error.message}): the file is truncated or is not a bundle`);
    }
    if (!isObject(bundle)) fail("not a JSON object");
    if (bundle.format !== FORMAT) fail(`"format" is not "${FORMAT}"`);
    if (bundle.version !== 1) {
      fail(`version ${JSON.stringify(bundle.version)} is not supported (this page reads version 1)`);
    }
    for (const [path, type] of FIELDS) {
      let value = bundle;
      for (const name of path.split(".")) {
        if (!Object.prototype.hasOwnProperty.call(value, name)) fail(`"${path}" is missing`);
        value = value[name];
      }
      if (!TYPES[type](value)) fail(`"${path}" is not a JSON ${type}`);
    }
    return bundle;
  }

  // ---- step 2: snapshot -----------------------------------------------------------------

  async function checkSnapshot(snapshot) {
    const bytes = base64Bytes(snapshot.bytes_base64);
    if (bytes === null) fail("bytes_base64 is not standard base64 with padding");
    if (bytes.length !== snapshot.size) {
      fail(`the snapshot is ${bytes.length} bytes, the bundle says ${snapshot.size}`);
    }
    const digest = hex(await sha256(bytes));
    if (digest !== snapshot.content_hash) {
      fail(`SHA-256 of the bytes is ${digest}, not the content hash ${snapshot.content_hash}`);
    }
    return bytes;
  }

  // ---- step 3: quote --------------------------------------------------------------------

  /** RFC 6901: the value at `pointer` in `doc`; fails naming the token it cannot follow. */
  function resolvePointer(doc, pointer) {
    if (pointer === "") return doc;
    if (!pointer.startsWith("/")) fail(`the pointer ${JSON.stringify(pointer)} does not start with "/"`);
    let value = doc;
    for (const raw of pointer.slice(1).split("/")) {
      if (/~(?![01])/.test(raw)) fail(`the pointer token ${JSON.stringify(raw)} has a bad "~" escape`);
      const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      if (Array.isArray(value)) {
        if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= value.length) {
          fail(`the pointer ${JSON.stringify(pointer)} names no item ${JSON.stringify(token)}`);
        }
        value = value[Number(token)];
      } else if (isObject(value) && Object.prototype.hasOwnProperty.call(value, token)) {
        value = value[token];
      } else {
        fail(`the pointer ${JSON.stringify(pointer)} leads nowhere at ${JSON.stringify(token)}`);
      }
    }
    return value;
  }

  const SINGLE = /[\u2018\u2019\u201B\u2032]/g;
  const DOUBLE = /[\u201C\u201D\u201F\u2033]/g;
  const DASH = /[\u2010-\u2015\u2212]/g;
  const SPACES = /[\u0009-\u000D\u0020\u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+/g;

  /** The comparison form of a quote (bundle-format, step 3). */
  function normalize(text) {
    return text
      .normalize("NFKC")
      .replace(SINGLE, "'")
      .replace(DOUBLE, '"')
      .replace(DASH, "-")
      .replace(SPACES, " ")
      .replace(/^ +| +$/g, "")
      .toLowerCase();
  }

  function checkQuote(bytes, quote, view) {
    let text;
    try {
      // ignoreBOM keeps a leading U+FEFF as a character, as a strict UTF-8 decode does.
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch (error) {
      fail("the snapshot is not UTF-8");
    }
    const { pointer, start, end } = quote.locator;
    let located = text;
    if (pointer !== null) {
      let doc;
      try {
        doc = JSON.parse(text);
      } catch (error) {
        fail(`the snapshot is not JSON (${error.message}), yet the quote has a pointer`);
      }
      view.document = doc;
      located = resolvePointer(doc, pointer);
      if (typeof located !== "string") fail(`the value at ${pointer} is not a string`);
    }
    const length = countPoints(located);
    if (!(0 <= start && start < end && end <= length)) {
      fail(`the offsets ${start}..${end} are not within the ${length} code points located`);
    }
    const from = unitIndex(located, start);
    const to = unitIndex(located, end, from, start);
    Object.assign(view, { located, start, end, from, to });
    const slice = located.slice(from, to);
    if (slice !== quote.exact) {
      fail(`the document reads ${JSON.stringify(clip(slice))} at ${start}..${end}, not the quote's exact words`);
    }
    if (normalize(quote.text) !== normalize(quote.exact)) {
      fail("the quote's text is not the document's words (compared after normalisation)");
    }
  }

  function clip(text) {
    return countPoints(text) > 60 ? text.slice(0, unitIndex(text, 60)) + "…" : text;
  }

  // ---- step 4: entry --------------------------------------------------------------------

  function unescapeValue(value) {
    return value.replace(/\\(.?)/g, (_, c) => {
      const replaced = { "\\": "\\", n: "\n", r: "\r" }[c];
      if (replaced === undefined) fail(`the entry holds an unknown escape \\${c}`);
      return replaced;
    });
  }

  function parseEntry(text) {
    if (!text.endsWith("\n")) fail("the log entry does not end in a line feed");
    const [header, ...lines] = text.slice(0, -1).split("\n");
    if (header !== ENTRY_HEADER) fail(`the log entry does not start with "${ENTRY_HEADER}"`);
    const fields = new Map();
    for (const line of lines) {
      const space = line.indexOf(" ");
      const name = space < 0 ? line : line.slice(0, space);
      if (fields.has(name)) fail(`the log entry has two "${name}" lines`);
      fields.set(name, space < 0 ? null : unescapeValue(line.slice(space + 1)));
    }
    return fields;
  }

  function checkEntry(bundle) {
    const fields = parseEntry(bundle.log.entry);
    const kind = fields.get("kind");
    if (kind !== "revision" && kind !== "restoration") {
      fail(`the log entry's kind is ${JSON.stringify(kind)}, not revision or restoration`);
    }
    const expected = [
      ["doc_id", bundle.document.doc_id, "document.doc_id"],
      ["revision", String(bundle.document.revision), "document.revision"],
      ["content_hash", bundle.snapshot.content_hash, "snapshot.content_hash"],
    ];
    for (const [name, value, path] of expected) {
      const got = fields.get(name);
      if (got !== value) {
        fail(`the log entry's ${name} is ${JSON.stringify(got === undefined ? null : got)}, the bundle's ${path} is ${JSON.stringify(value)}`);
      }
    }
  }

  // ---- step 5: inclusion ----------------------------------------------------------------

  function parseProof(text) {
    const split = text.indexOf("\n\n");
    if (split < 0) fail("the proof has no empty line before its checkpoint");
    const lines = text.slice(0, split).split("\n");
    if (lines[0] !== PROOF_HEADER) fail(`the proof does not start with "${PROOF_HEADER}"`);
    let at = 1;
    if (lines[at] !== undefined && lines[at].startsWith("extra ")) {
      if (base64Bytes(lines[at].slice(6)) === null) fail("the proof's extra line is not base64");
      at++;
    }
    const index = /^index (0|[1-9][0-9]*)$/.exec(lines[at] || "");
    if (!index) fail('the proof has no "index N" line');
    const hashes = lines.slice(at + 1).map((line, n) => {
      const hash = base64Bytes(line);
      if (hash === null || hash.length !== 32) fail(`proof hash ${n} is not 32 bytes of base64`);
      return hash;
    });
    return { index: Number(index[1]), hashes, checkpoint: text.slice(split + 2) };
  }

  /** The parts of a C2SP signed note: its body (up to and including the line feed before
   * the last empty line) and the text of its signature lines, not yet read. */
  function parseNote(text) {
    const split = text.lastIndexOf("\n\n");
    if (split < 0) return { body: text, signed: "" };
    return { body: text.slice(0, split + 1), signed: text.slice(split + 2) };
  }

  /** The signature lines of a note: name, key id and signature bytes (not verified). */
  function parseSignatures(signed) {
    const signatures = [];
    for (const line of signed.split("\n")) {
      if (line === "") continue;
      const match = /^\u2014 (\S+) (\S+)$/.exec(line);
      const raw = match && base64Bytes(match[2]);
      if (!raw || raw.length < 5) fail(`the checkpoint has a malformed signature line ${JSON.stringify(clip(line))}`);
      signatures.push({ name: match[1], keyId: uint32(raw), signature: raw.slice(4) });
    }
    return signatures;
  }

  /** The first four bytes as a big-endian unsigned number. */
  const uint32 = (bytes) => ((bytes[0] << 24) >>> 0) + (bytes[1] << 16) + (bytes[2] << 8) + bytes[3];

  function parseCheckpoint(body) {
    const lines = body.endsWith("\n") ? body.slice(0, -1).split("\n") : [];
    if (lines.length < 3) fail("the checkpoint has no origin, tree size and root hash lines");
    if (!/^(0|[1-9][0-9]*)$/.test(lines[1])) fail(`the checkpoint's tree size ${JSON.stringify(clip(lines[1]))} is not a number`);
    const root = base64Bytes(lines[2]);
    if (root === null || root.length !== 32) fail("the checkpoint's root hash is not 32 bytes of base64");
    return { origin: lines[0], size: Number(lines[1]), root };
  }

  async function nodeHash(left, right) {
    return sha256(concat(new Uint8Array([1]), left, right));
  }

  /** RFC 9162 section 2.1.3.2: does `path` lead from `leaf`, entry `index` of a tree of
   * `size` entries, to `root`? (Arithmetic, not bit operators: sizes may pass 2**31.) */
  async function checkInclusion(index, size, leaf, path, root) {
    if (index >= size) fail(`entry ${index} is not in the checkpoint's tree of ${size}`);
    let fn = index;
    let sn = size - 1;
    let r = leaf;
    for (const p of path) {
      if (sn === 0) fail(`the proof is longer than a tree of ${size} needs`);
      if (fn % 2 === 1 || fn === sn) {
        r = await nodeHash(p, r);
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      } else {
        r = await nodeHash(r, p);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    if (sn !== 0) fail(`the proof is shorter than a tree of ${size} needs`);
    if (!equalBytes(r, root)) {
      fail(`the proof of entry ${index} does not lead to the root of the checkpoint's tree of ${size}: a proof for another tree, or another entry`);
    }
  }

  async function checkIncluded(bundle, proof) {
    const { body } = parseNote(proof.checkpoint);
    const head = parseCheckpoint(body);
    const leaf = await sha256(concat(new Uint8Array([0]), utf8(bundle.log.entry)));
    await checkInclusion(proof.index, head.size, leaf, proof.hashes, head.root);
    return head;
  }

  // ---- step 6: checkpoint ---------------------------------------------------------------

  /** name+<8 hex key id>+base64(0x01 || 32-byte Ed25519 public key), its id checked. */
  async function parseVerifierKey(text) {
    const first = text.indexOf("+");
    const second = first < 0 ? -1 : text.indexOf("+", first + 1);
    if (second < 0) fail("the verifier key is not name+keyid+key");
    const name = text.slice(0, first);
    const id = text.slice(first + 1, second);
    const raw = base64Bytes(text.slice(second + 1));
    if (!name || /\s/.test(name) || !/^[0-9a-f]{8}$/i.test(id)) fail("the verifier key is not name+keyid+key");
    if (raw === null || raw.length !== 33 || raw[0] !== ED25519) fail(`the verifier key of ${name} is not an Ed25519 key`);
    const publicKey = raw.slice(1);
    const digest = await sha256(concat(utf8(name), new Uint8Array([0x0a, ED25519]), publicKey));
    const keyId = uint32(digest);
    if (keyId !== parseInt(id, 16)) fail(`the verifier key of ${name}: its key id ${id} does not match its key`);
    return { name, keyId, publicKey };
  }

  const keyName = (name, id) => `${name}+${id.toString(16).padStart(8, "0")}`;

  async function checkSigned(bundle, proof, trustedKey) {
    const given = bundle.log.verifier_key;
    if (trustedKey && trustedKey.trim() !== given) {
      fail(`the bundle's verifier key ${given} is not the trusted key ${trustedKey.trim()}`);
    }
    const key = await parseVerifierKey(given);
    const { body, signed } = parseNote(proof.checkpoint);
    const signatures = parseSignatures(signed);
    if (signatures.length === 0) fail("the checkpoint is not signed");
    const mine = signatures.filter((s) => s.name === key.name && s.keyId === key.keyId);
    if (mine.length === 0) {
      const by = [...new Set(signatures.map((s) => keyName(s.name, s.keyId)))].join(", ");
      fail(`the checkpoint is not signed by ${keyName(key.name, key.keyId)} (signed by ${by})`);
    }
    let publicKey;
    try {
      publicKey = await subtle().importKey("raw", key.publicKey, { name: "Ed25519" }, false, ["verify"]);
    } catch (error) {
      if (error instanceof StepFailure) throw error;
      fail(`cannot check the signature: this browser's Web Crypto has no Ed25519 (${error.name}); use a current browser or another verifier`);
    }
    for (const signature of mine) {
      const holds = signature.signature.length === 64 &&
        (await subtle().verify("Ed25519", publicKey, signature.signature, utf8(body)));
      if (!holds) fail(`the signature by ${keyName(key.name, key.keyId)} does not verify: the checkpoint was altered`);
    }
  }

  // ---- the steps in order ---------------------------------------------------------------

  async function verifyBundle(text, trustedKey) {
    const results = new Map(STEPS.map((step) => [step, { step, status: "not run", reason: "" }]));
    const view = {};
    async function run(step, check) {
      try {
        const value = await check();
        results.set(step, { step, status: "ok", reason: "" });
        return { ok: true, value };
      } catch (error) {
        const reason = error instanceof StepFailure ? error.message : `unexpected error: ${error}`;
        results.set(step, { step, status: "failed", reason });
        return { ok: false };
      }
    }
    const format = await run("format", () => checkFormat(text));
    if (format.ok) {
      const bundle = (view.bundle = format.value);
      const snapshot = await run("snapshot", () => checkSnapshot(bundle.snapshot));
      if (snapshot.ok) await run("quote", () => checkQuote(snapshot.value, bundle.quote, view));
      await run("entry", () => checkEntry(bundle));
      let proof = null;
      const inclusion = await run("inclusion", async () => {
        proof = parseProof(bundle.log.proof);
        return checkIncluded(bundle, proof);
      });
      if (inclusion.ok) view.checkpoint = inclusion.value;
      if (proof !== null) await run("checkpoint", () => checkSigned(bundle, proof, trustedKey));
    }
    const steps = STEPS.map((step) => results.get(step));
    return { steps, holds: steps.every((s) => s.status === "ok"), view };
  }

  const api = { STEPS, verifyBundle, normalize, resolvePointer, countPoints };
  root.ReceiptsProof = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
