/* The proof page: runs ReceiptsProof.verifyBundle (verify.js) on the bundle embedded in the
 * page, or on a bundle file the reader opens, and shows each step and the quote in its
 * document. Every text of the bundle reaches the page through textContent, never as markup;
 * invisible and direction characters are shown as visible codes. */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const LABELS = {
    format: "The file is a version 1 proof bundle",
    snapshot: "The snapshot's bytes have the stated SHA-256 content hash",
    quote: "The quote is the document's words at the stated place",
    entry: "The log entry names this document, revision and content hash",
    inclusion: "The entry is in the log (RFC 9162 inclusion proof)",
    checkpoint: "The log's checkpoint is signed by the log's key (Ed25519)",
  };
  // Bidi embeddings, overrides, isolates and marks, zero-width and other invisible
  // characters, C0/C1 controls but tab and line feed: shown as <U+XXXX>.
  const HIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u180E\u200B-\u200F\u2028\u2029\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/u;
  const HIDDEN_ALL = new RegExp(HIDDEN.source, "gu");

  /** Append `text` to `parent` as text nodes, each hidden character as a visible code. */
  function appendText(parent, text) {
    let last = 0;
    for (const match of text.matchAll(HIDDEN_ALL)) {
      if (match.index > last) parent.append(text.slice(last, match.index));
      const code = document.createElement("span");
      code.className = "hidden-char";
      code.textContent = `<U+${match[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`;
      parent.append(code);
      last = match.index + match[0].length;
    }
    if (last < text.length) parent.append(text.slice(last));
  }

  function setText(element, text) {
    element.replaceChildren();
    appendText(element, text);
  }

  function renderSteps(steps) {
    const list = $("steps");
    list.replaceChildren();
    for (const result of steps) {
      const item = document.createElement("li");
      item.className = "step";
      item.dataset.step = result.step;
      item.dataset.status = result.status;
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = { ok: "ok", failed: "failed", "not run": "not run" }[result.status];
      const name = document.createElement("strong");
      name.textContent = result.step;
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = LABELS[result.step];
      item.append(badge, " ", name, " ", label);
      if (result.reason) {
        const reason = document.createElement("p");
        reason.className = "reason";
        appendText(reason, result.reason);
        item.append(reason);
      }
      list.append(item);
    }
  }

  const jsonInner = (s) => JSON.stringify(s).slice(1, -1);

  /** A JSON value pretty-printed (two spaces, as JSON.stringify(value, null, 2) writes it)
   * as a list of text chunks, the string at `target` (a list of keys) as the object
   * MARK instead. Text, not nodes: a record of megabytes stays quick to show. */
  const MARK = {};
  function prettyJson(value, target) {
    const chunks = [];
    function write(value, indent, path) {
      const here = path.length === target.length && path.every((k, i) => k === target[i]);
      if (here && typeof value === "string") {
        chunks.push(MARK);
        return;
      }
      const pad = "  ".repeat(indent + 1);
      const close = "  ".repeat(indent);
      if (Array.isArray(value)) {
        if (value.length === 0) return chunks.push("[]");
        chunks.push("[\n");
        value.forEach((item, i) => {
          chunks.push(pad);
          write(item, indent + 1, [...path, String(i)]);
          chunks.push(i < value.length - 1 ? ",\n" : "\n");
        });
        chunks.push(close + "]");
      } else if (value !== null && typeof value === "object") {
        const keys = Object.keys(value);
        if (keys.length === 0) return chunks.push("{}");
        chunks.push("{\n");
        keys.forEach((key, i) => {
          chunks.push(pad, JSON.stringify(key), ": ");
          write(value[key], indent + 1, [...path, key]);
          chunks.push(i < keys.length - 1 ? ",\n" : "\n");
        });
        chunks.push(close + "}");
      } else {
        chunks.push(JSON.stringify(value));
      }
    }
    write(value, 0, []);
    const at = chunks.indexOf(MARK);
    return [chunks.slice(0, at).join(""), chunks.slice(at + 1).join("")];
  }

  function pointerTokens(pointer) {
    if (!pointer) return [];
    return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  }

  // How much of the document is shown on each side of the quote before "Show the whole
  // document": laying out megabytes of text takes the browser seconds.
  const CONTEXT = 20000;
  const isLow = (text, i) => /[\uDC00-\uDFFF]/.test(text.charAt(i));
  const countPoints = ReceiptsProof.countPoints;

  /** The end of `text` that is shown (from a line's start where one is near), and the rest. */
  function tail(text) {
    if (text.length <= CONTEXT) return [text, ""];
    let from = text.length - CONTEXT;
    const line = text.indexOf("\n", from);
    if (line >= 0 && line < text.length - CONTEXT / 2) from = line + 1;
    else if (isLow(text, from)) from += 1;
    return [text.slice(from), text.slice(0, from)];
  }

  /** The start of `text` that is shown (to a line's end where one is near), and the rest. */
  function head(text) {
    if (text.length <= CONTEXT) return [text, ""];
    let to = CONTEXT;
    const line = text.lastIndexOf("\n", to);
    if (line > CONTEXT / 2) to = line;
    else if (isLow(text, to)) to -= 1;
    return [text.slice(0, to), text.slice(to)];
  }

  function elided(text, where) {
    const note = document.createElement("span");
    note.className = "elided";
    note.textContent = `… ${countPoints(text).toLocaleString("en")} more characters ${where} …`;
    return note;
  }

  function renderDocument(view, whole) {
    const box = $("document");
    box.replaceChildren();
    const where = $("document-where");
    const button = $("document-whole");
    button.hidden = true;
    const bundle = view.bundle;
    if (view.from === undefined) {
      setText(where, "The quote could not be located in the document (see the steps).");
      return;
    }
    const pointer = bundle.quote.locator.pointer;
    const { located, start, end, from, to } = view;
    let before = located.slice(0, from);
    let quoted = located.slice(from, to);
    let after = located.slice(to);
    if (pointer !== null && view.document !== undefined) {
      setText(where, `The JSON record; the quote is in the string at ${pointer}, code points ${start} to ${end}.`);
      const [opening, closing] = prettyJson(view.document, pointerTokens(pointer));
      before = opening + '"' + jsonInner(before);
      quoted = jsonInner(quoted);
      after = jsonInner(after) + '"' + closing;
    } else {
      setText(where, `The document's text; the quote is at code points ${start} to ${end}.`);
    }
    const [shownBefore, cutBefore] = whole ? [before, ""] : tail(before);
    const [shownAfter, cutAfter] = whole ? [after, ""] : head(after);
    if (cutBefore) box.append(elided(cutBefore, "before"), "\n");
    appendText(box, shownBefore);
    const mark = document.createElement("mark");
    mark.id = "quote-mark";
    appendText(mark, quoted);
    box.append(mark);
    appendText(box, shownAfter);
    if (cutAfter) box.append("\n", elided(cutAfter, "after"));
    if (cutBefore || cutAfter) {
      button.hidden = false;
      button.onclick = () => {
        renderDocument(view, true);
        $("quote-mark").scrollIntoView({ block: "center" });
      };
    }
  }

  function renderBundle(bundle) {
    const doc = bundle.document || {};
    setText($("doc-title"), doc.title || doc.doc_id || "");
    setText($("doc-id"), doc.doc_id ? `${doc.doc_id} revision ${doc.revision}` : "");
    const quote = bundle.quote || {};
    setText($("quote-text"), quote.text || "");
    setText($("quote-exact"), quote.exact || "");
    const citation = bundle.citation || {};
    setLink($("source-url"), citation.url);
    setText($("captured-at"), citation.captured_at || "");
    const robust = citation.robust_links || {};
    setLink($("archived-url"), robust["data-versionurl"]);
    if (!robust["data-versionurl"]) setText($("archived-url"), "none");
    const snapshot = bundle.snapshot || {};
    setText($("content-hash"), snapshot.content_hash || "");
    setText($("canonical-form"), snapshot.canonical_form
      ? `${snapshot.canonical_form} (${snapshot.media_type}, ${snapshot.size} bytes)` : "");
    setText($("verifier-key"), (bundle.log && bundle.log.verifier_key) || "");
    renderClaim(bundle.claim);
  }

  /** A link only to an http(s) address (never javascript: or data:); else just the text. */
  function setLink(link, url) {
    url = typeof url === "string" ? url : "";
    setText(link, url);
    if (/^https?:\/\//i.test(url)) link.setAttribute("href", url);
    else link.removeAttribute("href");
  }

  /** The claim's status and its history of checks (as the bundle says; not a step). */
  function renderClaim(claim) {
    const section = $("claim");
    const list = $("claim-history");
    list.replaceChildren();
    section.hidden = !(claim && typeof claim === "object");
    if (section.hidden) return;
    setText($("claim-status"), `Claim ${claim.id}: ${claim.status}`);
    for (const check of Array.isArray(claim.history) ? claim.history : []) {
      const item = document.createElement("li");
      appendText(item, `check ${check.check}: ${check.status} at ${check.at}, revision ${check.revision}`);
      list.append(item);
    }
  }

  async function check(text) {
    const verdict = $("verdict");
    verdict.dataset.status = "running";
    setText(verdict, "Checking…");
    const result = await ReceiptsProof.verifyBundle(text, $("trusted-key").value);
    renderSteps(result.steps);
    renderBundle(result.view.bundle || {});
    renderDocument(result.view);
    const failed = result.steps.filter((s) => s.status === "failed").map((s) => s.step);
    verdict.dataset.status = result.holds ? "ok" : "failed";
    setText(verdict, result.holds
      ? "The quote holds: all six steps of the proof check out."
      : `This proof does not hold: the ${failed.join(", ")} step${failed.length > 1 ? "s" : ""} failed.`);
    document.body.dataset.verdict = verdict.dataset.status;
    const mark = $("quote-mark");
    if (mark && result.holds) mark.scrollIntoView({ block: "center" });
    window.scrollTo(0, 0);
  }

  let current = $("bundle").textContent;
  $("recheck").addEventListener("click", () => check(current));
  $("bundle-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    current = await file.text();
    check(current);
  });
  check(current);
})();
