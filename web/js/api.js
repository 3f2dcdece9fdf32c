// The API client: JSON requests to ktuned's /v1 (same origin, nothing from outside), the API token
// (kept in localStorage, sent as a Bearer header on every request), errors as ApiError with the
// service's code, message and hint, and a count of requests in flight for the loading indicator.

const TOKEN_KEY = "ktune.apiToken";
let inFlight = 0;
const busyListeners = new Set();

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || "http_" + status;
    this.hint = e.hint || "";
  }
}

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* private mode: the token lives for this page only */
  }
}

// fn(busy) is called whenever the number of requests in flight goes from 0 to 1 or back.
export function onBusy(fn) {
  busyListeners.add(fn);
  return () => busyListeners.delete(fn);
}

function setInFlight(delta) {
  const before = inFlight > 0;
  inFlight += delta;
  if (before !== inFlight > 0) for (const fn of busyListeners) fn(inFlight > 0);
}

// JSON text of a request body; a BigInt (a seed above 2^53) is written as the integer it is, never
// rounded through a double.
export function toJson(body) {
  return JSON.stringify(body, (_, v) => (typeof v === "bigint" ? `__bigint:${v}` : v)).replace(/"__bigint:(-?\d+)"/g, "$1");
}

export async function request(method, path, body, { signal, quiet } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const token = getToken();
  if (token) headers.Authorization = "Bearer " + token; // reads need one too once any token exists
  if (!quiet) setInFlight(1);
  try {
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : toJson(body),
      signal,
      cache: "no-store",
    });
    const text = await res.text();
    let parsed = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    if (!res.ok) throw new ApiError(res.status, parsed);
    return parsed;
  } finally {
    if (!quiet) setInFlight(-1);
  }
}

export const get = (path, opts) => request("GET", path, undefined, opts);

// A file the server makes (GET /v1/best?format=header, /v1/jobs/{id}/export?format=...): its text,
// content type and the name of Content-Disposition; an error reply is thrown as ApiError.
export async function getFile(path) {
  const headers = {};
  const token = getToken();
  if (token) headers.Authorization = "Bearer " + token;
  setInFlight(1);
  try {
    const res = await fetch(path, { headers, cache: "no-store" });
    const text = await res.text();
    if (!res.ok) {
      let parsed = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
      throw new ApiError(res.status, parsed);
    }
    const m = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") || "");
    return { text, type: res.headers.get("Content-Type") || "text/plain", filename: m ? m[1] : "" };
  } finally {
    setInFlight(-1);
  }
}
export const post = (path, body, opts) => request("POST", path, body, opts);
export const del = (path, opts) => request("DELETE", path, undefined, opts);

// Query string from an object, leaving out undefined, null and "" values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}
