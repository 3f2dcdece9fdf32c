// The dashboard's entry module: a hash router over the pages in js/pages/ (each exports
// mount(root, params) returning a cleanup function), the loading indicator, the health line and
// the API token form. Plain ES modules, no build step; Chart.js comes as a global from index.html.

import { onBusy, get, getToken, setToken } from "./js/api.js";
import { h, clear, errorBox } from "./js/dom.js";
import * as jobs from "./js/pages/jobs.js";
import * as job from "./js/pages/job.js";
import * as compare from "./js/pages/compare.js";
import * as best from "./js/pages/best.js";
import * as devices from "./js/pages/devices.js";
import * as models from "./js/pages/models.js";

const view = document.getElementById("view");
let cleanup = null;

// "#/jobs/12" -> {page: "job", params: {id: 12}}; "#/compare?jobs=1,2" -> params.query.
function parseRoute(hash) {
  const [path, qs] = (hash.replace(/^#/, "") || "/jobs").split("?");
  const parts = path.split("/").filter(Boolean);
  const query = Object.fromEntries(new URLSearchParams(qs || ""));
  if (parts[0] === "jobs" && parts[1]) return { page: "job", mod: job, params: { id: Number(parts[1]), query } };
  if (parts[0] === "models" && parts[1]) return { page: "models", mod: models, params: { id: Number(parts[1]), query } };
  const table = { jobs, compare, best, models, devices };
  const name = table[parts[0]] ? parts[0] : "jobs";
  return { page: name, mod: table[name], params: { query } };
}

function route() {
  const r = parseRoute(location.hash);
  if (cleanup) {
    try {
      cleanup();
    } catch (e) {
      console.warn("page cleanup failed", e);
    }
  }
  cleanup = null;
  for (const a of document.querySelectorAll("#nav a")) {
    const active = a.dataset.page === r.page || (r.page === "job" && a.dataset.page === "jobs");
    a.classList.toggle("active", active);
    if (active) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  document.body.dataset.page = r.page;
  clear(view, h("p", { class: "loading" }, "Loading…"));
  try {
    cleanup = r.mod.mount(view, r.params) || null;
  } catch (e) {
    clear(view, errorBox(e));
  }
  window.scrollTo(0, 0);
}

async function health() {
  const el = document.getElementById("health");
  try {
    const hz = await get("/healthz", { quiet: true });
    el.textContent = `database ${hz.database} · ${hz.devices} devices · v${hz.version}`;
    el.className = "health " + (hz.status === "ok" ? "ok" : "bad");
  } catch {
    el.textContent = "service unreachable";
    el.className = "health bad";
  }
}

function tokenForm() {
  const input = document.getElementById("token-input");
  const details = document.getElementById("token");
  input.value = getToken();
  details.querySelector("summary").textContent = getToken() ? "API token ✓" : "API token";
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    details.querySelector("summary").textContent = getToken() ? "API token ✓" : "API token";
    details.open = false;
    // A view that failed (e.g. 401: reads need a token once one exists) is loaded again with it.
    const boxes = [...document.querySelectorAll("#view .error-box")];
    if (boxes.some((b) => b.textContent.startsWith("unauthorized"))) route();
  });
}

const busy = document.getElementById("busy");
onBusy((on) => {
  busy.hidden = !on;
  document.body.toggleAttribute("data-busy", on);
});

tokenForm();
window.addEventListener("hashchange", route);
route();
health();
setInterval(health, 5000);
