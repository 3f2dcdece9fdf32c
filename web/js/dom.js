// Small DOM and formatting helpers shared by the pages: element builder, number, time and duration
// formats, status badges, progress bars, and copying text to the clipboard.

// h("div", {class: "x", onclick: fn}, child, "text", [more children]) -> element.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Times in ms with 4 significant digits, e.g. "1.632 ms", "12.48 ms", "1234 ms".
export function fmtMs(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  if (v >= 1000) return Math.round(v) + " ms";
  return String(Number(v.toPrecision(4))) + " ms"; // 4 significant digits, no trailing zeros
}

// What a trial's time_ms means on a device: milliseconds everywhere except on the analytical
// accelerators (`accel:<name>`), where the model reports the energy-delay product divided by the
// algorithmic minimum (1 = the bound; issue 13).
export function objectiveOf(device) {
  return typeof device === "string" && device.startsWith("accel:")
    ? { title: "EDP / minimum EDP", short: "EDP/min", fmt: fmtRatio }
    : { title: "time (ms)", short: "time", fmt: fmtMs };
}

// A ratio to a bound with 4 significant digits: "5.321×".
export function fmtRatio(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  return String(Number(v.toPrecision(4))) + "×";
}

export function fmtNum(v, digits = 4) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  return Number.isInteger(v) ? v.toLocaleString("en") : v.toPrecision(digits);
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, seconds);
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
  if (s < 3600) return Math.floor(s / 60) + " m " + String(Math.floor(s % 60)).padStart(2, "0") + " s";
  return Math.floor(s / 3600) + " h " + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + " m";
}

// "2026-11-22 04:18:35" in local time; the full ISO text in the title.
export function fmtTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// "3 min ago" style, for tables that refresh.
export function fmtAgo(iso, now = Date.now()) {
  if (!iso) return "–";
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = (now - t) / 1000;
  if (s < 5) return "just now";
  return fmtDuration(s) + " ago";
}

// A problem or configuration object as "a=1, b=2" (compact, for tables).
export function fmtObject(obj) {
  if (!obj || typeof obj !== "object") return obj === undefined || obj === null ? "–" : String(obj);
  const parts = Object.entries(obj).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join("×") : v}`);
  return parts.length ? parts.join(", ") : "–";
}

export function statusBadge(status) {
  return h("span", { class: "badge status-" + status }, status);
}

export function progressBar(fraction, label) {
  const pct = Math.max(0, Math.min(1, fraction || 0)) * 100;
  return h(
    "div",
    { class: "progress", role: "progressbar", "aria-valuenow": pct.toFixed(0), "aria-valuemin": "0", "aria-valuemax": "100" },
    h("div", { class: "progress-fill", style: `width:${pct.toFixed(1)}%` }),
    h("span", { class: "progress-label" }, label ?? pct.toFixed(0) + "%")
  );
}

// A link to the job and trial that measured a result (a best entry, a lookup's answer): the job
// page opens that trial's details (#/jobs/{job}?trial={trial}).
export function measuredBy(jobId, trialId) {
  if (jobId === null || jobId === undefined) return h("span", { class: "muted" }, "–");
  const href = trialId === null || trialId === undefined ? `#/jobs/${jobId}` : `#/jobs/${jobId}?trial=${trialId}`;
  return h("a", { href, class: "measured-by", "data-job": jobId, "data-trial": trialId ?? "" }, `job #${jobId}`, trialId === null || trialId === undefined ? null : ` · trial ${trialId}`);
}

export function errorBox(err) {
  return h(
    "div",
    { class: "error-box", role: "alert" },
    h("strong", {}, err.code ? err.code + ": " : "error: "),
    err.message || String(err),
    err.hint ? h("div", { class: "hint" }, err.hint) : null
  );
}

// Copies text; the Clipboard API needs a secure context, so plain http on another host falls back
// to a selected textarea and execCommand.
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      /* fall through */
    }
  }
  const ta = h("textarea", { class: "offscreen", readonly: true });
  ta.value = text;
  document.body.append(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  ta.remove();
  return ok;
}

export const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);
