// Models: the learned models of the service (GET /v1/models, polled every 2 s while one trains), a
// form that trains one (POST /v1/models: a predictor, or a surrogate of an accel device's cost model
// for the mindmap strategy), and
// one model in full (#/models/{id}): its key, training set, hyper-parameters, held-out metrics, and
// a chart of the measured time of the predicted configuration against the best measured time per
// held-out problem (metrics.heldout; entries whose prediction was never measured are listed, not
// plotted), with the y = x line a perfect predictor would sit on.

import { get, post, query } from "../api.js";
import { makeChart, destroyChart, color } from "../charts.js";
import { h, clear, fmtMs, fmtTime, fmtObject, fmtNum, statusBadge, errorBox, measuredBy } from "../dom.js";

const POLL_MS = 2000;

function field(label, value, cls) {
  return h("div", { class: "field " + (cls || "") }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

function fmtRatio(v) {
  return typeof v === "number" && isFinite(v) ? v.toFixed(3) + "×" : "–";
}

function fmtShare(v) {
  return typeof v === "number" && isFinite(v) ? (v * 100).toFixed(1) + "%" : "–";
}

// The predictor algorithms of POST /v1/models (service/api/openapi.json, ModelRequest.algorithm);
// left empty, the server's default.
const ALGORITHMS = ["seq2seq", "nearest", "common", "xgb"];

// "Train a model": kernel and device from /v1/kernels, a kind (a surrogate: accel devices only, its
// algorithm is mlp), an algorithm; POST /v1/models (with the API token when one is saved), then the
// new model's page.
function trainForm() {
  const kindSel = h("select", { name: "kind", id: "train-kind", "aria-label": "kind" }, h("option", { value: "predictor" }, "predictor"), h("option", { value: "surrogate" }, "surrogate (accel, mindmap)"));
  const kernelSel = h("select", { name: "kernel", id: "train-kernel", required: true, "aria-label": "kernel" });
  const deviceSel = h("select", { name: "device", id: "train-device", required: true, "aria-label": "device" });
  const algoSel = h("select", { name: "algorithm", id: "train-algorithm", "aria-label": "algorithm" }, h("option", { value: "" }, "(default)"), ALGORITHMS.map((a) => h("option", { value: a }, a)));
  const msg = h("div", { class: "form-msg" });
  let kernels = [];
  const fillDevices = () => {
    const k = kernels.find((x) => x.name === kernelSel.value);
    clear(deviceSel, (k ? k.devices : []).map((d) => h("option", { value: d.device }, d.device)));
  };
  kernelSel.addEventListener("change", fillDevices);
  get("/v1/kernels")
    .then((kk) => {
      kernels = kk.kernels;
      clear(kernelSel, kernels.map((k) => h("option", { value: k.name }, k.name)));
      fillDevices();
    })
    .catch((e) => clear(msg, errorBox(e)));
  kindSel.addEventListener("change", () => {
    algoSel.disabled = kindSel.value === "surrogate";
  });
  const form = h("form", { class: "inline-form", id: "train-form" }, h("label", {}, "Kernel", kernelSel), h("label", {}, "Device (its class)", deviceSel), h("label", {}, "Kind", kindSel), h("label", {}, "Algorithm", algoSel), h("button", { type: "submit" }, "Train"), msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { kernel: kernelSel.value, device: deviceSel.value, kind: kindSel.value };
    if (algoSel.value && kindSel.value === "predictor") body.algorithm = algoSel.value;
    try {
      const m = await post("/v1/models", body);
      location.hash = `#/models/${m.id}`;
    } catch (err) {
      clear(msg, errorBox(err));
    }
  });
  return h("details", { class: "card start" }, h("summary", {}, "Train a model"), h("p", { class: "muted" }, "A predictor learns from every problem tuned for the kernel on the device's class (same kernel source and toolchain); a surrogate learns an accel device's cost model from sampled problems and mappings, for the mindmap strategy."), form);
}

function listTable(models) {
  const head = h(
    "tr",
    {},
    ["id", "status", "algorithm", "version", "kernel", "device class", "problems", "trials / samples", "created", "finished"].map((t, i) =>
      h("th", { class: [0, 3, 6, 7].includes(i) ? "num" : i === 5 || i === 9 ? "opt" : i === 8 ? "opt2" : "" }, t)
    )
  );
  const rows = models.map((m) =>
    h(
      "tr",
      { "data-model": m.id },
      h("td", { class: "num" }, h("a", { href: `#/models/${m.id}` }, "#" + m.id)),
      h("td", {}, statusBadge(m.status)),
      h("td", {}, m.kind === "surrogate" ? `surrogate ${m.algorithm}` : m.algorithm),
      h("td", { class: "num" }, String(m.version)),
      h("td", {}, m.kernel),
      h("td", { class: "mono opt" }, m.device_class),
      h("td", { class: "num" }, m.training && m.training.problems != null ? String(m.training.problems) : "–"),
      h("td", { class: "num" }, m.training && m.training.trials != null ? String(m.training.trials) : m.training && m.training.samples != null ? String(m.training.samples) : "–"),
      h("td", { class: "opt2" }, fmtTime(m.created_at)),
      h("td", { class: "opt" }, fmtTime(m.finished_at))
    )
  );
  return h(
    "div",
    { class: "table-scroll" },
    h("table", { id: "models-table" }, h("thead", {}, head), h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 10, class: "muted" }, "No models yet: POST /v1/models or `ktune train` queues one."))))
  );
}

// The held-out entries split into points to plot and the whole list.
export function heldoutPoints(heldout) {
  const points = [];
  for (const e of heldout || []) {
    if (typeof e.predicted_time_ms === "number" && typeof e.best_time_ms === "number") points.push({ x: e.best_time_ms, y: e.predicted_time_ms, e });
  }
  return points;
}

// A surrogate's metrics (model/surrogate.h): its fit on held-out problems, no held-out predictions.
function surrogateMetricsSection(m) {
  const x = m.metrics || {};
  const known = ["test_objective_spearman", "test_objective_rmse", "test_huber", "train_huber"];
  const extra = Object.entries(x).filter(([k, v]) => !known.includes(k) && (typeof v !== "object" || v === null));
  return h(
    "section",
    { class: "card", id: "model-metrics" },
    h("h2", {}, "Held-out fit (EDP over its minimum)"),
    m.metrics
      ? h(
          "div",
          { class: "fields" },
          field("rank correlation (Spearman)", fmtNum(x.test_objective_spearman)),
          field("objective RMSE (ln units)", fmtNum(x.test_objective_rmse)),
          field("Huber loss, held out / trained", `${fmtNum(x.test_huber)} / ${fmtNum(x.train_huber)}`),
          extra.map(([k, v]) => field(k.replace(/_/g, " "), typeof v === "number" ? fmtNum(v) : String(v)))
        )
      : h("p", { class: "muted" }, m.status === "training" ? "Training…" : "No metrics.")
  );
}

function metricsSection(m) {
  if (m.kind === "surrogate") return surrogateMetricsSection(m);
  const x = m.metrics || {};
  const known = ["problems", "measured", "param_accuracy", "perfect", "top1_ratio_median", "top1_within_1_10", "heldout"];
  const extra = Object.entries(x).filter(([k, v]) => !known.includes(k) && (typeof v !== "object" || v === null));
  return h(
    "section",
    { class: "card", id: "model-metrics" },
    h("h2", {}, "Held-out metrics"),
    m.metrics
      ? h(
          "div",
          { class: "fields" },
          field("held-out problems", x.problems != null ? String(x.problems) : "–"),
          field("prediction measured", x.measured != null ? String(x.measured) : "–"),
          field("parameter accuracy", fmtShare(x.param_accuracy)),
          field("perfect", fmtShare(x.perfect)),
          field("top-1 ÷ best (median)", fmtRatio(x.top1_ratio_median)),
          field("top-1 within 1.10×", fmtShare(x.top1_within_1_10)),
          extra.map(([k, v]) => field(k.replace(/_/g, " "), typeof v === "number" ? fmtNum(v) : String(v)))
        )
      : h("p", { class: "muted" }, m.status === "training" ? "Training…" : "No metrics.")
  );
}

// What GET /v1/best judges the model by (issue 31, the server's confidence): the problems it was
// trained and evaluated on, its held-out accuracy, and whether it is weak (ready, but served by
// /v1/best only with accept=weak) and why.
function confidenceSection(m) {
  const c = m.confidence;
  if (!c) return null;
  const trained = (m.training && m.training.trained_on) || [];
  return h(
    "section",
    { class: "card", id: "model-confidence", "data-weak": c.weak ? "yes" : "no" },
    h("h2", {}, "Confidence ", h("span", { class: "badge " + (c.weak ? "status-failed" : "status-succeeded") }, c.weak ? "weak" : "served")),
    c.weak ? h("p", { class: "warn", id: "model-weak-why" }, `GET /v1/best serves its predictions only with accept=weak: ${c.why}.`) : h("p", { class: "muted" }, "GET /v1/best serves its predictions for problems never tuned."),
    h(
      "div",
      { class: "fields" },
      field("trained on", `${c.train_problems} problems (minimum ${c.minimum.problems})`),
      field("evaluated on", `${c.test_problems} held-out problems, ${c.measured} measured its prediction`),
      field("held-out accuracy", typeof c.accuracy === "number" ? `${fmtShare(c.accuracy)} within 1.10× of the best (minimum ${fmtShare(c.minimum.accuracy)})` : `unknown (minimum ${fmtShare(c.minimum.accuracy)})`),
      field("parameter accuracy", fmtShare(c.param_accuracy))
    ),
    trained.length ? h("details", { id: "model-trained-on" }, h("summary", {}, `the ${trained.length} problems it was trained on`), h("ul", { class: "mono" }, trained.map((p) => h("li", {}, fmtObject(p))))) : null
  );
}

// The best time GET /v1/best answers now for a held-out problem (source=measured, by the model's
// device class), into cell: the same number a deployment gets, which may differ from the best in
// the model's training data (a final pick's re-measured median, or faster trials since).
async function fillBestNow(m, problem, cell) {
  const args = {};
  for (const [k, v] of Object.entries(problem || {})) args[k] = Array.isArray(v) ? v.join(",") : String(v);
  try {
    const b = await get("/v1/best" + query({ ...args, kernel: m.kernel, device_class: m.device_class, source: "measured" }), { quiet: true });
    clear(cell, fmtMs(b.time_ms), h("br"), measuredBy(b.job_id, b.trial_id));
    cell.dataset.bestNow = String(b.time_ms);
  } catch {
    clear(cell, h("span", { class: "muted" }, "–"));
  }
}

function heldoutSection(m, charts) {
  const heldout = (m.metrics && m.metrics.heldout) || [];
  const points = heldoutPoints(heldout);
  const canvas = h("canvas", { id: "heldout-chart", "aria-label": "predicted against best measured time per held-out problem" });
  const note = h("p", { class: "muted", id: "heldout-note" });
  const rows = heldout.map((e) => {
    const ratio = typeof e.predicted_time_ms === "number" && e.best_time_ms > 0 ? e.predicted_time_ms / e.best_time_ms : null;
    const now = h("td", { class: "num best-now" }, "…");
    fillBestNow(m, e.problem, now);
    return h(
      "tr",
      { "data-plotted": ratio == null ? "no" : "yes" },
      h("td", { class: "mono" }, fmtObject(e.problem)),
      h("td", { class: "mono opt" }, fmtObject(e.config)),
      h("td", { class: "num" }, typeof e.predicted_time_ms === "number" ? fmtMs(e.predicted_time_ms) : h("span", { class: "muted" }, "not measured")),
      h("td", { class: "num" }, fmtMs(e.best_time_ms)),
      now,
      h("td", { class: "num" }, ratio == null ? "–" : fmtRatio(ratio))
    );
  });
  const section = h(
    "section",
    { class: "card", id: "heldout" },
    h("h2", {}, "Held-out problems: predicted against best"),
    points.length ? h("div", { class: "chart-box" }, canvas) : null,
    note,
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { id: "heldout-table" },
        h("thead", {}, h("tr", {}, h("th", {}, "problem"), h("th", { class: "opt" }, "predicted configuration"), h("th", { class: "num" }, "its time"), h("th", { class: "num", title: "the fastest trial in the model's training data, which the ratio and the metrics use" }, "best in training data"), h("th", { class: "num", title: "GET /v1/best?source=measured now: what a deployment gets" }, "best time (/v1/best)"), h("th", { class: "num" }, "ratio"))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No held-out problems.")))
      )
    )
  );
  const unplotted = heldout.length - points.length;
  note.textContent = heldout.length
    ? `${points.length} of ${heldout.length} held-out problems plotted` + (unplotted ? `; ${unplotted} predicted a configuration never measured for that problem (listed below, not plotted).` : ".") + " On the dashed line: predicted as fast as the best; above it: slower, by the ratio in the table."
    : "";
  if (points.length) {
    // The y = x line runs a little past the points on both ends (log axes: by a factor).
    const lo = Math.min(...points.map((p) => Math.min(p.x, p.y))) / 1.25;
    const hi = Math.max(...points.map((p) => Math.max(p.x, p.y))) * 1.25;
    const datasets = [
      { label: "held-out problem", data: points.map(({ x, y }) => ({ x, y })), backgroundColor: color(0, 0.75), pointRadius: 4 },
      { label: "y = x (predicted as fast as the best)", type: "line", data: [{ x: lo, y: lo }, { x: hi, y: hi }], borderColor: color(8, 0.7), borderDash: [5, 4], pointRadius: 0, borderWidth: 1.5 },
    ];
    const label = (ctx) => {
      const p = points[ctx.dataIndex];
      return ctx.datasetIndex === 0 && p ? `${fmtObject(p.e.problem)}: predicted ${fmtMs(p.y)}, best ${fmtMs(p.x)}` : "";
    };
    // Drawn once the section is in the document (Chart.js measures its box).
    requestAnimationFrame(() => {
      if (!canvas.isConnected) return;
      charts.push(makeChart(canvas, datasets, { xTitle: "best measured time (ms)", yTitle: "measured time of the predicted configuration (ms)", logX: true, logY: true, label }));
      section.dataset.drawn = String(points.length);
    });
  }
  return section;
}

function detail(m, charts) {
  const t = m.training || {};
  const err = m.error;
  return h(
    "div",
    { id: "model-detail", "data-status": m.status },
    h(
      "section",
      { class: "card" },
      h("div", { class: "card-head" }, h("h2", {}, `Model #${m.id} `, statusBadge(m.status)), h("a", { href: "#/models" }, "all models")),
      h(
        "div",
        { class: "fields" },
        field("algorithm", `${m.kind} ${m.algorithm}, version ${m.version}`),
        field("kernel", m.kernel),
        field("device class", m.device_class),
        field("kernel hash", m.kernel_hash),
        field("toolchain", m.toolchain || "–"),
        field(
          "training set",
          t.problems == null ? "–" : m.kind === "surrogate" ? `${t.problems} sampled problems, ${t.samples} valid mappings (${fmtShare(t.valid_fraction)} of those drawn)` : `${t.problems} problems, ${t.trials} trials`
        ),
        m.kind === "surrogate" ? null : field("measured from", t.from ? `${fmtTime(t.from)} to ${fmtTime(t.to)}` : "–"),
        field("hyper-parameters", fmtObject(m.hyper)),
        field("size", m.size_bytes != null ? `${m.size_bytes.toLocaleString("en")} bytes (format ${m.format_version})` : "–"),
        field("created", fmtTime(m.created_at)),
        field("started", fmtTime(m.started_at)),
        field("finished", fmtTime(m.finished_at)),
        err ? field("error", `${err.code}: ${err.message}`, "error-text") : null
      )
    ),
    confidenceSection(m),
    metricsSection(m),
    m.metrics && m.kind !== "surrogate" ? heldoutSection(m, charts) : null
  );
}

export function mount(root, { id }) {
  let alive = true;
  let timer = null;
  let first = true;
  const charts = [];
  const msg = h("div", { class: "msg" });
  const body = h("div", { id: "models-body" });
  clear(root, h("div", { class: "page-head", id: "models-page" }, h("h1", {}, id ? `Model #${id}` : "Models")), id ? null : trainForm(), msg, body);

  async function refresh() {
    let again = false;
    try {
      if (id) {
        const m = await get(`/v1/models/${id}`, { quiet: !first });
        if (!alive) return;
        charts.splice(0).forEach(destroyChart);
        clear(body, detail(m, charts));
        again = m.status === "training";
      } else {
        const page = await get("/v1/models?limit=200", { quiet: !first });
        if (!alive) return;
        clear(body, h("section", { class: "card" }, h("h2", {}, "Models"), h("p", { class: "muted" }, "Predictors trained from the tuned problems of a kernel on a device class (the newest ready one answers GET /v1/best for problems never tuned), and surrogates of accel devices' cost models (mindmap jobs search through the newest ready one)."), listTable(page.models)));
        again = page.models.some((m) => m.status === "training");
      }
      clear(msg);
      root.dataset.loaded = "yes";
    } catch (e) {
      if (!alive) return;
      clear(msg, errorBox(e));
      again = !first;
    }
    first = false;
    if (again && alive) timer = setTimeout(refresh, POLL_MS);
  }
  refresh();
  return () => {
    alive = false;
    clearTimeout(timer);
    charts.splice(0).forEach(destroyChart);
  };
}
