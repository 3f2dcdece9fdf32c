// Best: a lookup form that asks /v1/best for a kernel, device and problem (the problem's fields
// come from the catalog, prefilled with the recorded problem) and shows how the answer was made
// (measured, predicted by a model, or the nearest tuned problem), and the best-known table from
// /v1/best/entries, filtered by kernel and device class (by the API) and by text (in the page),
// sortable and paged.

import { get, query } from "../api.js";
import { DataTable } from "../table.js";
import { exportButtons } from "../export.js";
import { h, clear, fmtMs, objectiveOf, fmtNum, fmtTime, fmtObject, errorBox, copyText, measuredBy } from "../dom.js";

// A problem value as a query argument: numbers as they are, lists comma-separated.
function problemArg(v) {
  return Array.isArray(v) ? v.join(",") : String(v);
}

// A prediction's confidence (issue 31): the model's trained and held-out problems, its held-out
// accuracy, whether it is weak (served only with accept=weak) and why, and the nearest trained problem.
function confidenceLine(c) {
  if (!c) return null;
  const acc = typeof c.accuracy === "number" ? `${(c.accuracy * 100).toFixed(0)}% of ${c.measured} held-out problems within 1.10× of their best` : "held-out accuracy unknown";
  const near = c.nearest_trained ? ` · nearest trained problem ${fmtObject(c.nearest_trained.problem)} (log-distance ${fmtNum(c.nearest_trained.distance)})` : "";
  return h(
    "p",
    { class: c.weak ? "warn" : "muted", id: "lookup-confidence", "data-weak": c.weak ? "yes" : "no" },
    c.weak ? h("strong", {}, "A weak model's guess: ") : null,
    `trained on ${c.train_problems} problems, evaluated on ${c.test_problems}; ${acc}${near}`,
    c.weak && c.why ? h("span", { class: "muted" }, ` (${c.why})`) : null
  );
}

// How an answer was made: the measurement (job, repeats, noise), the model, or the nearest problem.
function provenance(best) {
  if (best.source === "predicted") {
    const m = best.model || {};
    return h(
      "div",
      {},
      h("p", { class: "muted" }, "Not measured: predicted by ", h("a", { href: `#/models/${m.id}` }, `model #${m.id}`), ` (${m.algorithm}, version ${m.version}), score ${fmtNum(best.score)} · problem ${fmtObject(best.problem)}`),
      confidenceLine(best.confidence),
      best.candidates && best.candidates.length > 1 ? h("details", {}, h("summary", {}, `${best.candidates.length} candidates`), h("ol", { class: "mono" }, best.candidates.map((c) => h("li", {}, `${fmtObject(c.config)} (score ${fmtNum(c.score)})`)))) : null
    );
  }
  if (best.source === "nearest") {
    const n = best.nearest || {};
    // origin: the neighbour's, "measured" or "imported" (an import an admin trusted: issue 26).
    const via = best.origin === "imported" ? "imported, " : "";
    return h("p", { class: "muted" }, `Not measured for this problem: the best of the nearest tuned problem ${fmtObject(n.problem)} (log-distance ${fmtNum(n.distance)}, ${fmtMs(n.time_ms)} there, ${via}`, measuredBy(n.job_id, n.trial_id), ")");
  }
  const p = best.provenance || {};
  const how = [p.repeats != null ? `${p.repeats} repeats` : null, p.noise_cv != null ? `noise ${(p.noise_cv * 100).toFixed(1)}%` : null].filter(Boolean).join(", ");
  // "imported": measured elsewhere and sent with POST /v1/imports; any measurement here replaces it.
  const what = best.source === "imported" ? "imported" : "measured";
  return h("p", { class: "muted" }, `from `, measuredBy(best.job_id, best.trial_id), `, ${what} ${fmtTime(best.measured_at)}${how ? " (" + how + ")" : ""} · problem ${fmtObject(best.problem)}`);
}

function lookupSection(kernels) {
  const kernelSel = h("select", { id: "lookup-kernel", name: "kernel", "aria-label": "kernel" }, kernels.map((k) => h("option", { value: k.name }, k.name)));
  const deviceSel = h("select", { id: "lookup-device", name: "device", "aria-label": "device" });
  const problemBox = h("div", { class: "problem-fields" });
  const out = h("div", { id: "lookup-result", role: "status" });
  const fillProblem = () => {
    const k = kernels.find((x) => x.name === kernelSel.value);
    const d = k && k.devices.find((x) => x.device === deviceSel.value);
    const problem = (d && d.problem) || {};
    clear(
      problemBox,
      Object.entries(problem).map(([name, v]) =>
        h("label", {}, name, h("input", { name: "problem:" + name, value: problemArg(v), "aria-label": "problem " + name }))
      )
    );
  };
  const fillDevices = () => {
    const k = kernels.find((x) => x.name === kernelSel.value);
    clear(deviceSel, (k ? k.devices : []).map((d) => h("option", { value: d.device }, d.device)));
    fillProblem();
  };
  kernelSel.addEventListener("change", fillDevices);
  deviceSel.addEventListener("change", fillProblem);
  fillDevices();

  const form = h(
    "form",
    { class: "inline-form", id: "lookup-form" },
    h("label", {}, "Kernel", kernelSel),
    h("label", {}, "Device", deviceSel),
    problemBox,
    h("label", { class: "check" }, h("input", { type: "checkbox", id: "lookup-nearest" }), "nearest tuned problem as a fallback"),
    h("label", { class: "check" }, h("input", { type: "checkbox", id: "lookup-weak" }), "a weak model's guess too (accept=weak)"),
    h("button", { type: "submit" }, "Look up")
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const params = { kernel: kernelSel.value, device: deviceSel.value };
    for (const input of problemBox.querySelectorAll("input")) if (input.value.trim() !== "") params[input.name.slice(8)] = input.value.trim();
    if (form.querySelector("#lookup-nearest").checked) params.fallback = "nearest";
    if (form.querySelector("#lookup-weak").checked) params.accept = "weak";
    const url = "/v1/best" + query(params);
    clear(out, h("p", { class: "loading" }, "Looking up…"));
    try {
      const best = await get(url);
      const copyMsg = h("span", { class: "muted" });
      clear(
        out,
        h(
          "div",
          { class: "lookup-hit", "data-found": "yes", "data-source": best.source },
          h("div", { class: "best-line" }, h("span", { class: "badge source-" + best.source }, best.source), best.source === "measured" || best.source === "imported" ? h("span", { class: "big" }, objectiveOf(params.device).fmt(best.time_ms)) : null,
            h("button", { type: "button", class: "small", onclick: async () => { copyMsg.textContent = (await copyText(JSON.stringify(best.config, null, 2))) ? "copied" : "could not copy"; } }, "Copy JSON"),
            copyMsg),
          h("pre", { class: "json" }, JSON.stringify(best.config, null, 2)),
          provenance(best),
          // The answer as ktune best --format writes it, made by the server (GET /v1/best?...&format=).
          exportButtons(["header", "flags"], (f) => url + "&format=" + f, { id: "lookup-export", name: `ktune_${params.kernel}` }),
          best.tune_on_miss ? h("p", { class: "muted" }, best.tune_on_miss.queued ? "queued " : "already tuning: ", h("a", { href: `#/jobs/${best.tune_on_miss.job_id}` }, `job #${best.tune_on_miss.job_id}`)) : null,
          h("p", { class: "muted mono" }, "GET " + url)
        )
      );
    } catch (err) {
      clear(out, h("div", { "data-found": "no" }, errorBox(err)), h("p", { class: "muted mono" }, "GET " + url));
    }
  });
  return h("section", { class: "card" }, h("h2", {}, "Look up the best configuration"), form, out);
}

function browseSection(kernels) {
  let rows = [];
  let text = "";
  let kernel = "";
  let deviceClass = "";
  const msg = h("div", { class: "msg" });
  const table = new DataTable(
    [
      { key: "kernel", label: "kernel", value: (i) => rows[i].kernel, render: (i) => rows[i].kernel },
      { key: "device", label: "device", cls: "mono", value: (i) => rows[i].device, render: (i) => rows[i].device },
      { key: "problem", label: "problem", cls: "mono opt", value: (i) => fmtObject(rows[i].problem), render: (i) => fmtObject(rows[i].problem) },
      { key: "time", label: "time", cls: "num", value: (i) => rows[i].time_ms, render: (i) => objectiveOf(rows[i].device).fmt(rows[i].time_ms) },
      { key: "job", label: "measured by", cls: "num", value: (i) => rows[i].job_id, render: (i) => measuredBy(rows[i].job_id, rows[i].trial_id) },
      { key: "config", label: "configuration", cls: "mono", value: (i) => fmtObject(rows[i].config), render: (i) => fmtObject(rows[i].config) },
      { key: "at", label: "measured", cls: "opt", value: (i) => rows[i].measured_at, render: (i) => fmtTime(rows[i].measured_at) },
    ],
    { pageSize: 25, empty: "Nothing known yet: finished jobs fill this table." }
  );
  table.el.id = "best-table";
  let all = [];
  const apply = () => {
    rows = text ? all.filter((r) => JSON.stringify(r).toLowerCase().includes(text)) : all;
    table.setCount(rows.length, { force: true });
  };
  const load = async () => {
    try {
      const page = await get("/v1/best/entries" + query({ kernel, device_class: deviceClass, limit: 1000 }));
      all = page.best || [];
      clear(msg);
      apply();
    } catch (e) {
      clear(msg, errorBox(e));
    }
  };
  const kernelSel = h(
    "select",
    { id: "best-kernel", "aria-label": "kernel filter", onchange: (e) => { kernel = e.target.value; load(); } },
    h("option", { value: "" }, "all kernels"),
    kernels.map((k) => h("option", { value: k.name }, k.name))
  );
  const classInput = h("input", { type: "text", id: "best-class", placeholder: "device class", "aria-label": "device class filter", onchange: (e) => { deviceClass = e.target.value.trim(); load(); } });
  const search = h("input", { type: "search", id: "best-search", placeholder: "search…", "aria-label": "search the table", oninput: (e) => { text = e.target.value.trim().toLowerCase(); apply(); } });
  load();
  return h("section", { class: "card" }, h("div", { class: "card-head" }, h("h2", {}, "Best known"), h("div", { class: "controls" }, kernelSel, classInput, search)), msg, table.el);
}

export function mount(root) {
  let alive = true;
  get("/v1/kernels")
    .then((kk) => {
      if (!alive) return;
      clear(root, h("div", { class: "page-head" }, h("h1", {}, "Best configurations")), lookupSection(kk.kernels), browseSection(kk.kernels));
    })
    .catch((e) => alive && clear(root, errorBox(e)));
  return () => {
    alive = false;
  };
}
