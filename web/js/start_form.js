// The Jobs page's "Start a job" form: everything POST /v1/tune takes for a device the service
// measures on (issue 31): the kernel and its version, the device, the problem's arguments (from
// GET /v1/kernels: bounds, defaults, integer or float), the strategy and its options (from
// GET /v1/strategies: type, bounds, choices), the budget in evaluations and/or seconds, the seed
// (any 64-bit value, sent unrounded), the warm start, parallel measurement, the final pick and the
// objective (a metric the kernel declares). Fields left empty take the API's defaults.
//
// Checked as the API checks them before anything is sent (bounds, integers, at least one budget);
// a refusal from the service is shown with its hint and marks the field its message names
// (refusedField). External jobs start from a harness (clients/python, the ask/tell API), not
// from this form; neural-network jobs from the API.

import { get, post } from "./api.js";
import { h, clear, errorBox } from "./dom.js";

const SEED_MAX = 9223372036854775807n;

// An input for a number within [min, max] (either may be undefined), integer unless float.
function numberInput(path, { min, max, float, placeholder }) {
  return h("input", {
    name: path,
    type: "number",
    step: float ? "any" : "1",
    min: min === undefined ? undefined : String(min),
    max: max === undefined ? undefined : String(max),
    placeholder: placeholder === undefined ? "default" : String(placeholder),
    "aria-label": path,
    dataset: { path },
  });
}

function field(label, input, title) {
  return h("label", { title }, label, input);
}

// One input per strategy option, by its declared type (StrategyOption in the OpenAPI description).
function optionInput(name, opt) {
  const path = "strategy_options." + name;
  if (opt.type === "boolean")
    return h("select", { name: path, "aria-label": path, dataset: { path, kind: "boolean" } },
      h("option", { value: "" }, `default (${opt.default})`), h("option", { value: "true" }, "true"),
      h("option", { value: "false" }, "false"));
  if (opt.type === "string" && opt.choices)
    return h("select", { name: path, "aria-label": path, dataset: { path, kind: "string" } },
      h("option", { value: "" }, `default (${opt.default})`),
      opt.choices.split("|").map((c) => h("option", { value: c }, c)));
  if (opt.type === "integer" || opt.type === "number") {
    const el = numberInput(path, { min: opt.minimum, max: opt.maximum, float: opt.type === "number", placeholder: opt.default });
    el.dataset.kind = opt.type;
    return el;
  }
  // "string" without choices, or "string|object" (a start state: a choice or a configuration).
  return h("input", {
    name: path,
    type: "text",
    placeholder: opt.default === null || opt.default === undefined ? "default" : String(opt.default),
    "aria-label": path,
    dataset: { path, kind: opt.type },
    title: opt.choices ? `${opt.choices}, or a configuration as JSON` : undefined,
  });
}

// The value of an option input, or undefined when empty; throws Error("<path>: ...") when bad.
function optionValue(el) {
  const v = el.value.trim();
  if (v === "") return undefined;
  const path = el.dataset.path;
  switch (el.dataset.kind) {
    case "boolean":
      return v === "true";
    case "integer":
    case "number":
      return checkedNumber(el);
    case "string|object":
      if (v.startsWith("{")) {
        try {
          return JSON.parse(v);
        } catch {
          throw new Error(`${path}: not a JSON object`);
        }
      }
      return v;
    default:
      return v;
  }
}

// A number input's value, checked as the API checks it (an integer where the step is 1, within
// min and max); undefined when empty.
function checkedNumber(el) {
  const raw = el.value.trim();
  if (raw === "") {
    if (el.validity && el.validity.badInput) throw new Error(`${el.dataset.path}: must be a number`);
    return undefined;
  }
  const v = Number(raw);
  const path = el.dataset.path;
  if (!Number.isFinite(v)) throw new Error(`${path}: must be a number`);
  if (el.step === "1" && !Number.isInteger(v)) throw new Error(`${path}: must be an integer`);
  if (el.min !== "" && v < Number(el.min)) throw new Error(`${path}: must be at least ${el.min}`);
  if (el.max !== "" && v > Number(el.max)) throw new Error(`${path}: must be at most ${el.max}`);
  return v;
}

// The seed as a BigInt (sent as a JSON integer, never rounded through a double), or undefined.
function seedValue(el) {
  const v = el.value.trim();
  if (v === "") return undefined;
  if (!/^\d{1,19}$/.test(v) || BigInt(v) > SEED_MAX) throw new Error(`seed: an integer from 0 to ${SEED_MAX}`);
  return BigInt(v);
}

// The field a refusal of the service names: "option 't0' of strategy anneal ...",
// "problem argument M = ...", or a message that starts with the field's path ("budget.seconds: ...").
export function refusedField(message) {
  let m = /^option '([\w-]+)' of strategy/.exec(message);
  if (m) return "strategy_options." + m[1];
  m = /^problem argument ([\w-]+)/.exec(message);
  if (m) return "problem." + m[1];
  m = /^([A-Za-z_][\w.]*):/.exec(message);
  return m ? m[1] : null;
}

export function startForm(onStarted) {
  const kernelSel = h("select", { name: "kernel", required: true, "aria-label": "kernel", dataset: { path: "kernel" } });
  const versionSel = h("select", { name: "kernel_version", "aria-label": "kernel version", dataset: { path: "kernel_version" } });
  const deviceSel = h("select", { name: "device", required: true, "aria-label": "device", dataset: { path: "device" } });
  const strategySel = h("select", { name: "strategy", "aria-label": "strategy", dataset: { path: "strategy" } });
  const evals = numberInput("budget.evaluations", { min: 1, max: 1000000, placeholder: 100 });
  evals.name = "evaluations";
  evals.value = "100";
  const seconds = numberInput("budget.seconds", { min: 0.001, max: 604800, float: true, placeholder: "none" });
  seconds.name = "seconds";
  const seed = h("input", { name: "seed", type: "text", inputmode: "numeric", placeholder: "random", "aria-label": "seed", dataset: { path: "seed" } });
  const historySel = h("select", { name: "history", "aria-label": "history", dataset: { path: "history" } },
    h("option", { value: "" }, "auto (default)"), h("option", { value: "none" }, "none"));
  const parallel = numberInput("parallel", { min: 1, max: 64, placeholder: 1 });
  const remeasure = numberInput("final_remeasure", { min: 0, max: 8, placeholder: "default" });
  const rounds = numberInput("final_rounds", { min: 1, max: 16, placeholder: 5 });
  const metricSel = h("select", { name: "objective.metric", "aria-label": "objective metric", dataset: { path: "objective.metric" } });
  const goalSel = h("select", { name: "objective.goal", "aria-label": "objective goal", dataset: { path: "objective.goal" } },
    h("option", { value: "min" }, "min"), h("option", { value: "max" }, "max"));
  const problemBox = h("div", { class: "form-group", id: "start-problem" });
  const optionsBox = h("div", { class: "form-group", id: "start-options" });
  const objectiveBox = h("div", { class: "form-group", id: "start-objective" });
  const msg = h("div", { class: "form-msg" });
  let kernels = [];
  let strategies = [];

  const kernelOf = () => kernels.find((x) => x.name === kernelSel.value);
  const deviceOf = () => (kernelOf()?.devices || []).find((d) => d.device === deviceSel.value);

  const fillProblem = () => {
    const d = deviceOf();
    const args = (d && d.problem_arguments) || [];
    clear(problemBox, args.length ? h("span", { class: "group-label" }, "Problem") : null,
      args.map((a) => field(a.name, numberInput("problem." + a.name, { min: a.min, max: a.max, float: a.type === "float", placeholder: a.default }),
        `${a.type === "float" ? "a number" : "an integer"} from ${a.min} to ${a.max}; empty: ${a.default}`)));
    const metrics = (d && d.metrics) || [];
    clear(metricSel, h("option", { value: "" }, "time (default)"), metrics.map((m) => h("option", { value: m.name }, m.name)));
    clear(objectiveBox, metrics.length ? [h("span", { class: "group-label" }, "Objective"), field("Metric", metricSel), field("Goal", goalSel)] : null);
  };
  const fillDevices = () => {
    const k = kernelOf();
    clear(deviceSel, (k ? k.devices : []).filter((d) => d.device !== "external").map((d) => h("option", { value: d.device }, d.device)));
    clear(versionSel, h("option", { value: "" }, "newest ready"));
    versionSel.disabled = true;
    if (k && k.origin === "stored") {
      // A stored kernel's ready, unretired versions, newest first (GET /v1/kernels/{name}).
      get("/v1/kernels/" + encodeURIComponent(k.name), { quiet: true })
        .then((kv) => {
          if (kernelOf() !== k) return;
          const ready = kv.versions.filter((v) => v.status === "ready" && !v.retired);
          for (const v of ready) versionSel.append(h("option", { value: v.version, title: v.created_at }, `${v.version.slice(0, 12)} (${v.created_at.slice(0, 16)})`));
          versionSel.disabled = !ready.length;
        })
        .catch(() => {});
    }
    fillProblem();
  };
  const fillOptions = () => {
    const s = strategies.find((x) => x.name === strategySel.value);
    const opts = Object.entries((s && s.options) || {});
    clear(optionsBox, opts.length ? h("span", { class: "group-label" }, "Strategy options") : null,
      opts.map(([name, opt]) => field(name, optionInput(name, opt), opt.description)));
  };
  kernelSel.addEventListener("change", fillDevices);
  deviceSel.addEventListener("change", fillProblem);
  strategySel.addEventListener("change", fillOptions);
  Promise.all([get("/v1/kernels"), get("/v1/strategies")])
    .then(([kk, ss]) => {
      kernels = kk.kernels.filter((k) => k.status !== "invalid" && k.devices.some((d) => d.device !== "external"));
      strategies = ss.strategies;
      clear(kernelSel, kernels.map((k) => h("option", { value: k.name }, k.name)));
      clear(strategySel, strategies.map((s) => h("option", { value: s.name, title: s.summary }, s.name)));
      strategySel.value = strategies.some((s) => s.name === ss.default) ? ss.default : strategies[0]?.name;
      fillDevices();
      fillOptions();
    })
    .catch((e) => clear(msg, errorBox(e)));

  const form = h(
    "form",
    { class: "inline-form", id: "start-form", novalidate: true },
    field("Kernel", kernelSel),
    field("Version", versionSel),
    field("Device", deviceSel),
    problemBox,
    field("Strategy", strategySel),
    optionsBox,
    field("Evaluations", evals, "distinct configurations, 1 to 1,000,000; empty: none (then seconds)"),
    field("Seconds", seconds, "measurement seconds at most; empty: none"),
    field("Seed", seed, "0 to 2^63-1; empty: a fresh random seed"),
    field("Warm start", historySel),
    field("Parallel", parallel, "configurations measured at once, 1 to 64"),
    field("Final pick", remeasure, "how many of the fastest are measured again, 0 to 8"),
    field("Rounds", rounds, "re-measurements of each, 1 to 16"),
    objectiveBox,
    h("button", { type: "submit" }, "Start"),
    msg
  );

  const markInvalid = (path) => {
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const el = path && form.querySelector(`[data-path="${CSS.escape(path)}"]`);
    if (el) {
      el.setAttribute("aria-invalid", "true");
      el.focus();
    }
  };
  // The request's body from the fields; throws Error("<path>: ...") naming the first bad field.
  const body = () => {
    const b = { kernel: kernelSel.value, device: deviceSel.value, strategy: strategySel.value };
    if (versionSel.value) b.kernel_version = versionSel.value;
    const problem = {};
    for (const el of problemBox.querySelectorAll("input")) {
      const v = checkedNumber(el);
      if (v !== undefined) problem[el.dataset.path.slice("problem.".length)] = v;
    }
    if (Object.keys(problem).length) b.problem = problem;
    const options = {};
    for (const el of optionsBox.querySelectorAll("[data-path]")) {
      const v = optionValue(el);
      if (v !== undefined) options[el.dataset.path.slice("strategy_options.".length)] = v;
    }
    if (Object.keys(options).length) b.strategy_options = options;
    const budget = {};
    const e = checkedNumber(evals);
    const s = checkedNumber(seconds);
    if (e !== undefined) budget.evaluations = e;
    if (s !== undefined) budget.seconds = s;
    if (!Object.keys(budget).length) throw new Error("budget.evaluations: give evaluations, seconds or both");
    b.budget = budget;
    const sd = seedValue(seed);
    if (sd !== undefined) b.seed = sd;
    if (historySel.value) b.history = historySel.value;
    for (const [el, name] of [[parallel, "parallel"], [remeasure, "final_remeasure"], [rounds, "final_rounds"]]) {
      const v = checkedNumber(el);
      if (v !== undefined) b[name] = v;
    }
    if (metricSel.value) b.objective = { metric: metricSel.value, goal: goalSel.value };
    return b;
  };

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let b;
    try {
      b = body();
    } catch (err) {
      markInvalid(err.message.split(":")[0]);
      clear(msg, errorBox({ code: "bad_request", message: err.message, hint: "nothing was sent; fix the field and start again" }));
      return;
    }
    try {
      const job = await post("/v1/tune", b);
      markInvalid(null);
      clear(msg, h("span", { class: "ok" }, `job ${job.id} ${job.status}`));
      onStarted(job);
    } catch (err) {
      markInvalid(refusedField(err.message || ""));
      clear(msg, errorBox(err));
    }
  });
  return h("details", { class: "card start" }, h("summary", {}, "Start a job"), form);
}
