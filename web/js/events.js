// A job's live updates by Server-Sent Events (GET /v1/jobs/{id}/events, issue 31): one batch of
// events a request; the server answers when trials finished after the cursor, the status differs
// from the one given, the job ended, or wait_s passed (the job event alone). Read with fetch(), not
// EventSource: an EventSource cannot send the API token that reads need once a token exists.

import { getToken, ApiError } from "./api.js";

// The events of one SSE text: [{event, id, data}] (data lines joined by "\n", as EventSource does).
export function parseEvents(text) {
  const out = [];
  for (const block of text.split(/\n\n+/)) {
    const ev = { event: "message", id: null, data: null };
    for (const line of block.split("\n")) {
      const colon = line.indexOf(":");
      if (colon === 0 || !line) continue; // a comment, or nothing
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "event") ev.event = value;
      else if (name === "id") ev.id = value;
      else if (name === "data") ev.data = ev.data === null ? value : ev.data + "\n" + value;
    }
    if (ev.data !== null) out.push(ev);
  }
  return out;
}

// The next batch of job id's events after cursor `after`: {job, trials (a compact trials page, or
// null), end}. Throws ApiError on a refusal (the caller falls back to polling).
export async function nextEvents(id, { after, status, waitS = 15, signal }) {
  const headers = { Accept: "text/event-stream" };
  const token = getToken();
  if (token) headers.Authorization = "Bearer " + token;
  const q = new URLSearchParams({ after: String(after), wait_s: String(waitS) });
  if (status) q.set("status", status);
  const res = await fetch(`/v1/jobs/${id}/events?${q}`, { headers, signal, cache: "no-store" });
  const text = await res.text();
  if (!res.ok) {
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    throw new ApiError(res.status, body);
  }
  const got = { job: null, trials: null, end: false };
  for (const ev of parseEvents(text)) {
    if (ev.event === "job") got.job = JSON.parse(ev.data);
    else if (ev.event === "trials") got.trials = JSON.parse(ev.data);
    else if (ev.event === "end") got.end = true;
  }
  if (!got.job) throw new ApiError(502, { error: { code: "bad_events", message: "the events carried no job" } });
  return got;
}
